//! The core's public API changes only on purpose: every public item (its
//! path and signature) is listed in `public-api.txt`, and this test fails
//! with the difference when the source says otherwise. After a change
//! meant to be made, bless the listing and commit it with the change:
//!
//! ```text
//! LOOPSCOPE_BLESS=1 cargo test -p loopscope-core --test public_api
//! ```
//!
//! The listing is read from the source with `syn` (what `cargo
//! public-api` does from rustdoc's JSON needs a nightly toolchain): the
//! modules reachable through `pub mod` from `lib.rs`, each `pub` item in
//! them (not `pub(crate)`, not `#[cfg(test)]`), the `pub` methods of their
//! inherent impls, the trait impls, and the public fields and variants.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{Attribute, Fields, ImplItem, Item, TraitItem, Visibility};

const LISTING: &str = "public-api.txt";

#[test]
fn the_public_api_is_the_committed_listing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let now = listing(&root.join("src"));
    let path = root.join(LISTING);
    if std::env::var_os("LOOPSCOPE_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != now {
        let was: BTreeSet<&str> = committed.lines().collect();
        let is: BTreeSet<&str> = now.lines().collect();
        let mut diff = String::new();
        for gone in was.difference(&is) {
            let _ = writeln!(diff, "- {gone}");
        }
        for new in is.difference(&was) {
            let _ = writeln!(diff, "+ {new}");
        }
        panic!(
            "loopscope-core's public API differs from {LISTING} (- listed, + in the source):\n{diff}\n\
             If the change is meant, bless the listing and commit it with the change:\n  \
             LOOPSCOPE_BLESS=1 cargo test -p loopscope-core --test public_api"
        );
    }
}

/// Every public item under `src/lib.rs`, one a line, sorted.
fn listing(src: &Path) -> String {
    let mut found = Found::default();
    walk_file(&src.join("lib.rs"), "loopscope_core", &mut found);
    let mut lines = found.lines;
    // A trait impl is public where its type is: kept for the public types.
    for (ty, line) in found.impls {
        if found.types.contains(&ty) {
            lines.insert(line);
        }
    }
    let mut out = String::from(
        "# loopscope-core's public API (tests/public_api.rs; bless with LOOPSCOPE_BLESS=1 cargo test -p loopscope-core --test public_api)\n",
    );
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// What the walk found: item lines, the public types' names, and every
/// trait impl with its type's name (kept if that type is public).
#[derive(Default)]
struct Found {
    lines: BTreeSet<String>,
    types: BTreeSet<String>,
    impls: Vec<(String, String)>,
}

impl Found {
    fn insert(&mut self, line: String) {
        self.lines.insert(line);
    }

    /// A public struct or enum: its line (derives and `#[non_exhaustive]`
    /// are API too), its name kept for its trait impls; returns its path.
    fn declare(
        &mut self,
        path: &str,
        attrs: &[Attribute],
        what: &str,
        ident: &syn::Ident,
        generics: &syn::Generics,
    ) -> String {
        let name = format!("{path}::{ident}");
        let exhaustive = if attrs.iter().any(|a| a.path().is_ident("non_exhaustive")) {
            "#[non_exhaustive] "
        } else {
            ""
        };
        self.types.insert(ident.to_string());
        self.insert(format!(
            "{name}: {}{exhaustive}pub {what} {ident}{}",
            derives(attrs),
            tokens(generics)
        ));
        name
    }
}

fn walk_file(file: &Path, path: &str, out: &mut Found) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    // A module's children live in `dir/name.rs` or `dir/name/mod.rs`.
    let dir = if file.ends_with("lib.rs") || file.ends_with("mod.rs") {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    walk_items(&parsed.items, path, &dir, out);
}

fn walk_items(items: &[Item], path: &str, dir: &Path, out: &mut Found) {
    for item in items {
        if is_test_only(attrs_of(item)) {
            continue;
        }
        match item {
            Item::Mod(m) if is_pub(&m.vis) => {
                let child = format!("{path}::{}", m.ident);
                let hidden = if is_doc_hidden(&m.attrs) { " #[doc(hidden)]" } else { "" };
                out.insert(format!("{child}: pub mod{hidden}"));
                match &m.content {
                    Some((_, inner)) => walk_items(inner, &child, &dir.join(m.ident.to_string()), out),
                    None => walk_file(&module_file(dir, &m.ident.to_string(), &m.attrs), &child, out),
                }
            }
            Item::Fn(f) if is_pub(&f.vis) => {
                out.insert(format!("{path}::{}: {}", f.sig.ident, tokens(&f.sig)));
            }
            Item::Struct(s) if is_pub(&s.vis) => {
                let name = out.declare(path, &s.attrs, "struct", &s.ident, &s.generics);
                for (i, field) in s.fields.iter().enumerate() {
                    if is_pub(&field.vis) {
                        let field_name = field.ident.as_ref().map_or(i.to_string(), |i| i.to_string());
                        out.insert(format!("{name}.{field_name}: {}", tokens(&field.ty)));
                    }
                }
            }
            Item::Enum(e) if is_pub(&e.vis) => {
                let name = out.declare(path, &e.attrs, "enum", &e.ident, &e.generics);
                for v in &e.variants {
                    let fields = match &v.fields {
                        Fields::Unit => String::new(),
                        f => tokens(f),
                    };
                    out.insert(format!("{name}::{}{}", v.ident, fields));
                }
            }
            Item::Trait(t) if is_pub(&t.vis) => {
                let name = format!("{path}::{}", t.ident);
                out.types.insert(t.ident.to_string());
                out.insert(format!("{name}: pub trait {}{}", t.ident, tokens(&t.generics)));
                for ti in &t.items {
                    match ti {
                        TraitItem::Fn(f) => {
                            out.insert(format!("{name}::{}: {}", f.sig.ident, tokens(&f.sig)));
                        }
                        TraitItem::Type(ty) => {
                            out.insert(format!("{name}::{}: type", ty.ident));
                        }
                        TraitItem::Const(c) => {
                            out.insert(format!("{name}::{}: const {}", c.ident, tokens(&c.ty)));
                        }
                        _ => {}
                    }
                }
            }
            Item::Const(c) if is_pub(&c.vis) => {
                out.insert(format!("{path}::{}: pub const {}", c.ident, tokens(&c.ty)));
            }
            Item::Static(s) if is_pub(&s.vis) => {
                out.insert(format!("{path}::{}: pub static {}", s.ident, tokens(&s.ty)));
            }
            Item::Type(t) if is_pub(&t.vis) => {
                out.insert(format!("{path}::{}: pub type = {}", t.ident, tokens(&t.ty)));
            }
            Item::Use(u) if is_pub(&u.vis) => {
                out.insert(format!("{path}: pub use {}", tokens(&u.tree)));
            }
            Item::Macro(m) if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) => {
                if let Some(ident) = &m.ident {
                    out.insert(format!("loopscope_core::{ident}!: macro"));
                }
            }
            Item::Impl(i) => {
                let self_ty = tokens(&i.self_ty);
                match &i.trait_ {
                    // Trait impls are public wherever the type is; listed
                    // once each (a type's name is unique enough here).
                    Some((neg, tr, _)) => {
                        let neg = if neg.is_some() { "!" } else { "" };
                        let line = format!(
                            "impl{} {neg}{} for {self_ty} (in {path})",
                            tokens(&i.generics),
                            tokens(tr)
                        );
                        out.impls.push((type_name(&i.self_ty), line));
                    }
                    None => {
                        for ii in &i.items {
                            if let ImplItem::Fn(f) = ii {
                                if is_pub(&f.vis) && !is_test_only(&f.attrs) {
                                    out.insert(format!("{path}::{self_ty}::{}: {}", f.sig.ident, tokens(&f.sig)));
                                }
                            }
                            if let ImplItem::Const(c) = ii {
                                if is_pub(&c.vis) {
                                    out.insert(format!("{path}::{self_ty}::{}: const {}", c.ident, tokens(&c.ty)));
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// Where `mod name;` declared in `dir` lives (`#[path]` honoured).
fn module_file(dir: &Path, name: &str, attrs: &[Attribute]) -> PathBuf {
    for a in attrs {
        if a.path().is_ident("path") {
            if let syn::Meta::NameValue(nv) = &a.meta {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }) = &nv.value
                {
                    return dir.join(s.value());
                }
            }
        }
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// The last segment of a type's path (`Box<dyn Detector>`: `Box`).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map_or(String::new(), |s| s.ident.to_string()),
        other => tokens(other),
    }
}

/// `#[derive(Clone, Debug)] ` (derived traits are API too), or nothing.
fn derives(attrs: &[Attribute]) -> String {
    let mut out = String::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        out += &format!("#[{}] ", tokens(&a.meta));
    }
    out
}

fn attrs_of(item: &Item) -> &[Attribute] {
    match item {
        Item::Mod(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Const(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

/// `#[cfg(test)]` (and `#[cfg(all(test, …))]`): not part of the API.
fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let t = tokens(&a.meta);
            t.starts_with("cfg(test") || t.starts_with("cfg(all(test")
        }
    })
}

fn is_doc_hidden(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("doc") && tokens(&a.meta) == "doc(hidden)")
}

/// Tokens as compact text: `fn scan(reader: impl Read, hint: Option<&str>) -> Result<Scanned, Error>`.
fn tokens(t: &impl ToTokens) -> String {
    let spaced = t.to_token_stream().to_string();
    let mut s = spaced;
    for (from, to) in [
        (" ,", ","),
        (" ;", ";"),
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" : ", ": "),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        ("& ", "&"),
        ("# ", "#"),
        (" !", "!"),
        (" . ", "."),
        ("{ ", "{"),
        (" }", "}"),
        (",)", ")"),
    ] {
        while s.contains(from) {
            s = s.replace(from, to);
        }
    }
    // `->` and `=>` lost their space before `>` above; `fn f (` and
    // `FnMut (` are written without the space.
    let s = s
        .replace("->", " -> ")
        .replace("  ", " ")
        .replace("=>", " => ")
        .replace("  ", " ");
    static SPACED_PAREN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let spaced = SPACED_PAREN.get_or_init(|| regex::Regex::new(r"(\w) \(").unwrap());
    spaced.replace_all(&s, "$1(").into_owned()
}
