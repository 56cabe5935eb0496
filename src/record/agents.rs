//! How `record -- COMMAND` points an agent at the proxy: the base-URL
//! variables agents and their SDKs read, per API family. Each variable's
//! value (or the family's public URL) becomes an upstream behind a route
//! of its own, and the command gets the route's local URL instead.

use super::{Route, Upstream};

/// The variables that name one API's base URL.
pub struct Family {
    /// The route's name (`/openai/…`) and `--upstream NAME=URL`'s.
    pub name: &'static str,
    pub default_url: &'static str,
    /// Read by: OPENAI_BASE_URL the OpenAI SDKs, Codex, opencode (AI SDK);
    /// OPENAI_API_BASE litellm (aider); ANTHROPIC_BASE_URL the Anthropic
    /// SDKs and Claude Code; ANTHROPIC_API_BASE litellm;
    /// GOOGLE_GEMINI_BASE_URL gemini-cli and Google's genai SDK;
    /// GEMINI_API_BASE litellm.
    pub vars: &'static [&'static str],
}

pub const FAMILIES: [Family; 3] = [
    Family {
        name: "openai",
        default_url: "https://api.openai.com/v1",
        vars: &["OPENAI_BASE_URL", "OPENAI_API_BASE"],
    },
    Family {
        name: "anthropic",
        default_url: "https://api.anthropic.com",
        vars: &["ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"],
    },
    Family {
        name: "gemini",
        default_url: "https://generativelanguage.googleapis.com",
        vars: &["GOOGLE_GEMINI_BASE_URL", "GEMINI_API_BASE"],
    },
];

/// The proxy's routes for a command, and which variable goes to which route.
#[derive(Debug)]
pub struct Plan {
    pub routes: Vec<Route>,
    /// (variable, route prefix).
    pub vars: Vec<(String, String)>,
}

/// Routes for every family: `--upstream NAME=URL` first, else each
/// variable's own value, else the public URL. Variables of one family with
/// different values get routes of their own (`/openai`, `/openai-2`).
pub fn plan(env: &dyn Fn(&str) -> Option<String>, named: &[(String, String)]) -> Result<Plan, String> {
    let mut plan = Plan {
        routes: Vec::new(),
        vars: Vec::new(),
    };
    for family in &FAMILIES {
        let value = |var: &str| env(var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        // The family's URL: --upstream NAME=URL, else the first variable
        // set (the others follow it), else the public API.
        let chosen = named.iter().find(|(n, _)| n == family.name).map(|(_, u)| u.clone());
        let base = chosen
            .clone()
            .or_else(|| family.vars.iter().find_map(|v| value(v)))
            .unwrap_or_else(|| family.default_url.to_string());
        let mut urls: Vec<String> = Vec::new();
        for var in family.vars {
            let own = value(var).filter(|_| chosen.is_none());
            let source = match (&chosen, &own) {
                (Some(_), _) => format!("--upstream {}", family.name),
                (None, Some(_)) => (*var).to_string(),
                (None, None) => String::new(),
            };
            let url = own.unwrap_or_else(|| base.clone());
            let n = match urls.iter().position(|u| *u == url) {
                Some(n) => n,
                None => {
                    let upstream = Upstream::parse(&url).map_err(|e| match source.as_str() {
                        "" => e,
                        s => format!("{s}: {e}"),
                    })?;
                    urls.push(url);
                    plan.routes.push(Route {
                        prefix: route_name(family.name, urls.len() - 1),
                        upstream,
                    });
                    urls.len() - 1
                }
            };
            plan.vars.push(((*var).to_string(), route_name(family.name, n)));
        }
    }
    for (name, url) in named {
        if FAMILIES.iter().all(|f| f.name != name) {
            let upstream = Upstream::parse(url)?;
            plan.routes.push(Route {
                prefix: format!("/{name}"),
                upstream,
            });
        }
    }
    Ok(plan)
}

/// `/openai`, then `/openai-2`, … for a family's further URLs.
fn route_name(family: &str, n: usize) -> String {
    match n {
        0 => format!("/{family}"),
        n => format!("/{family}-{}", n + 1),
    }
}

/// `--upstream [NAME=]URL`: a named route, or (no name) the one for every path.
pub fn parse_upstream(text: &str) -> Result<(Option<String>, String), String> {
    match text.split_once('=') {
        Some((name, url))
            if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && url.contains("://") =>
        {
            Ok((Some(name.to_string()), url.to_string()))
        }
        _ if text.contains("://") => Ok((None, text.to_string())),
        _ => Err(format!(
            "expected URL or NAME=URL (e.g. openai=https://api.openai.com/v1), got {:?}",
            crate::http::upstream::shown_url(text)
        )),
    }
}

/// The base URL a child process reaches a route at.
pub fn local_url(addr: std::net::SocketAddr, prefix: &str) -> String {
    let host = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".to_string(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => "[::1]".to_string(),
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    format!("http://{host}:{}{prefix}", addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_become_upstreams_and_point_at_their_routes() {
        let env = |k: &str| match k {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:11434/v1".to_string()),
            "OPENAI_API_BASE" => Some("https://openrouter.ai/api/v1".to_string()),
            "GEMINI_API_BASE" => Some("https://gemini.example/".to_string()),
            _ => None,
        };
        let plan = plan(&env, &[("anthropic".into(), "http://localhost:9/".into())]).unwrap();
        let routes: Vec<(String, String)> = plan
            .routes
            .iter()
            .map(|r| (r.prefix.clone(), r.upstream.url()))
            .collect();
        assert_eq!(
            routes,
            [
                ("/openai".to_string(), "http://127.0.0.1:11434/v1".to_string()),
                ("/openai-2".to_string(), "https://openrouter.ai/api/v1".to_string()),
                ("/anthropic".to_string(), "http://localhost:9".to_string()),
                ("/gemini".to_string(), "https://gemini.example".to_string()),
            ]
        );
        assert!(plan.vars.contains(&("OPENAI_API_BASE".into(), "/openai-2".into())));
        assert!(plan.vars.contains(&("ANTHROPIC_API_BASE".into(), "/anthropic".into())));
        // One variable of a family set: the others follow it.
        assert!(plan.vars.contains(&("GOOGLE_GEMINI_BASE_URL".into(), "/gemini".into())));
        let public = super::plan(&|_: &str| None, &[]).unwrap();
        assert_eq!(public.routes.len(), 3);
        assert_eq!(public.vars.len(), 6);
        let bad = |k: &str| (k == "ANTHROPIC_BASE_URL").then(|| "api.anthropic.com?key=secret".to_string());
        let e = super::plan(&bad, &[]).unwrap_err();
        assert!(e.starts_with("ANTHROPIC_BASE_URL: ") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn upstream_flags_and_local_urls() {
        assert_eq!(parse_upstream("https://x/v1").unwrap(), (None, "https://x/v1".into()));
        assert_eq!(
            parse_upstream("openai=https://x/v1?a=b").unwrap(),
            (Some("openai".into()), "https://x/v1?a=b".into())
        );
        assert!(parse_upstream("localhost:8080").is_err());
        assert_eq!(
            local_url("0.0.0.0:81".parse().unwrap(), "/gemini"),
            "http://127.0.0.1:81/gemini"
        );
        assert_eq!(local_url("[::1]:82".parse().unwrap(), ""), "http://[::1]:82");
    }
}
