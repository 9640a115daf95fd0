"""Facts: the parsed, indexed evidence every check and read tool shares (see tools.facts.model),
built by build_facts (tools.facts.build); fact queries checks share live in tools.facts.queries."""

from tools.facts.build import build_facts
from tools.facts.model import ArtifactInfo, Facts

__all__ = ["ArtifactInfo", "Facts", "build_facts"]
