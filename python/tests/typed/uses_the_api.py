"""A small typed program against loopscope's stubs: `mypy --strict` must
accept it (tests/test_typing.py runs it). A profile held in a `str`
variable, as a config file or a CLI flag gives it, type-checks."""

import os
import pickle
from typing import Dict, List, Optional

import loopscope


def profile_from_config(config: Dict[str, str]) -> str:
    return config.get("profile", "extended")


def first_reason(profile: str, deltas: List[str]) -> Optional[str]:
    d = loopscope.Detector(profile=profile, params={"text-loop.copies": 4})
    d.push_request()
    for delta in deltas:
        found: List[loopscope.Detection] = d.push_reasoning(delta)
        if found:
            return found[0].reason
    return None


def scan_all(paths: List[str]) -> int:
    name = profile_from_config({"profile": os.environ.get("PROFILE", "seed")})
    scanner = loopscope.Scanner(profile=name)
    copy: loopscope.Scanner = pickle.loads(pickle.dumps(scanner))
    total = 0
    for p in paths:
        total += len(copy.scan(p))
        total += len(loopscope.scan(p, profile=name))
    literal = loopscope.Detector(profile="seed")  # the known names still complete
    return total + literal.events + len(loopscope.detectors(name))


if __name__ == "__main__":
    print(first_reason(profile_from_config({}), ["Wait, let me check. "] * 10))
