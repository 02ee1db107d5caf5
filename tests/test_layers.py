"""The package's imports only point down the pipeline's layers, no modules import each other in a loop, and no
module reaches 600 lines (a module that long has more than one job).

The imports are read from the code itself (every ``import`` statement, at any depth: an import inside
a function or under ``TYPE_CHECKING`` is the same dependency, paid later).  The layers, lowest
first: the exceptions, the shared plumbing, the parameters, then the stages: the client,
collection, simulation (populations and simulated reports, used to check the privacy and
analysis stages), privacy, analysis, the file formats (above every type they read and write),
the engines (which run the client and collection steps over files), reporting, the command
line, and the package's face.  A module may import from its own layer and the layers below.
The command line uses other stages through their faces only (no private module of theirs).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rappor

PACKAGE = Path(rappor.__file__).parent

#: Lowest first.  A module's layer is that of the longest prefix of its dotted name listed here.
LAYERS = [
    ["rappor.exceptions"],
    ["rappor._util"],
    ["rappor.params"],
    ["rappor.client"],
    ["rappor.collect"],
    ["rappor.simulation"],
    ["rappor.privacy"],
    ["rappor.analysis"],
    ["rappor.formats"],
    ["rappor.engines"],
    ["rappor.report"],
    ["rappor.cli"],
    ["rappor", "rappor.__main__"],
]


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    best, found = -1, -1
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), level
    assert found >= 0, f"{module} is in no layer"
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, list[tuple[int, str]]]:
    """For each module of ``package`` (a folder), the ``(line, module)`` of every module of it that it imports."""
    root = package.parent
    graph = {}
    for path in sorted(package.rglob("*.py")):
        name = _module_name(path, package)
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = here.split(".")
                    target = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != package.name:
                    continue
                for alias in node.names:  # ``from . import x`` imports the module x when there is one
                    sub = Path(root, *f"{target}.{alias.name}".split("."))
                    is_module = sub.with_suffix(".py").exists() or (sub / "__init__.py").exists()
                    found.append((node.lineno, f"{target}.{alias.name}" if is_module else target))
            elif isinstance(node, ast.Import):
                found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == package.name]
        graph[name] = [(line, target) for line, target in found if target != name]
    return graph


def upward_imports(package: Path = PACKAGE) -> list[str]:
    """``file:line: importer -> imported`` for each import from a lower layer to a higher one."""
    return [f"{importer}:{line} -> {target}" for importer, targets in import_graph(package).items()
            for line, target in targets if layer(target) > layer(importer)]


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """The sets of modules that import each other in a loop (strongly connected, more than one module)."""
    graph = {name: sorted({t for _, t in targets}) for name, targets in import_graph(package).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return cycles


def test_every_module_is_in_a_layer() -> None:
    for name in import_graph():
        layer(name)


def test_imports_only_point_down_the_layers() -> None:
    assert upward_imports() == []


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def _made_up_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``rappor`` under ``tmp_path`` with ``files`` (path: text), and an ``__init__.py`` in each folder."""
    package = tmp_path / "rappor"
    for name, text in files.items():
        path = package / name
        for folder in [package, *reversed(path.relative_to(package).parents[:-1])]:
            (package / folder).mkdir(parents=True, exist_ok=True)
            (package / folder / "__init__.py").touch()
        path.write_text(text)
    return package


def test_the_checks_see_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    # A made-up package shaped like ours: its client imports the decoder (upward, at any depth),
    # and two of its formats modules import each other.
    package = _made_up_package(tmp_path, {
        "params.py": "",
        "client/_encoder.py": "from ..params import Params\n\ndef f():\n    from ..analysis.decoder import _fit\n",
        "analysis/decoder/_fit.py": "from ...client import _encoder\n",
        "formats/_a.py": "from ._b import x\n",
        "formats/_b.py": "from . import _a\n",
    })
    assert upward_imports(package) == ["rappor.client._encoder:4 -> rappor.analysis.decoder._fit"]
    assert ["rappor.formats._a", "rappor.formats._b"] in import_cycles(package)


def private_imports(importer_prefix: str, package: Path = PACKAGE) -> list[str]:
    """``importer:line -> imported`` for each import, by a module under ``importer_prefix``, of a
    private module of another stage (a dotted name with a part starting with ``_``, outside the
    importer's own stage and the shared plumbing ``rappor._util``): what a face should offer."""
    stage = ".".join(importer_prefix.split(".")[:2])
    found = []
    for importer, targets in import_graph(package).items():
        if importer != importer_prefix and not importer.startswith(importer_prefix + "."):
            continue
        for line, target in targets:
            if target == stage or target.startswith((stage + ".", f"{package.name}._util")):
                continue
            if any(part.startswith("_") for part in target.split(".")[1:]):
                found.append(f"{importer}:{line} -> {target}")
    return found


def test_the_command_line_imports_only_the_faces_of_other_stages() -> None:
    assert private_imports("rappor.cli") == []


def test_the_face_check_sees_a_private_import(tmp_path: Path) -> None:
    # Its own stage's modules, the shared plumbing and another stage's face pass; a private module does not.
    package = _made_up_package(tmp_path, {
        "_util/outputs.py": "",
        "analysis/decoder/_decoder.py": "",
        "cli/_common.py": "",
        "cli/_decode.py": ("from .._util.outputs import x\nfrom ._common import y\nfrom ..analysis.decoder import Decoder\n\n"
                           "def run():\n    from ..analysis.decoder._decoder import check_estimator\n"),
    })
    assert private_imports("rappor.cli", package) == ["rappor.cli._decode:6 -> rappor.analysis.decoder._decoder"]


#: A module of this many lines or more has more than one job: split it by job.
MAX_MODULE_LINES = 600


def long_modules(package: Path = PACKAGE) -> list[str]:
    """``module: lines`` for each module of ``package`` with :data:`MAX_MODULE_LINES` lines or more."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines >= MAX_MODULE_LINES:
            found.append(f"{_module_name(path, package)}: {lines}")
    return found


def test_every_module_is_under_600_lines() -> None:
    assert long_modules() == []


def test_the_length_check_sees_a_long_module(tmp_path: Path) -> None:
    package = _made_up_package(tmp_path, {"client/_short.py": "x = 1\n" * 599, "client/_long.py": "x = 1\n" * 600})
    assert long_modules(package) == ["rappor.client._long: 600"]


#: "issue 23", "Issue #7": history belongs in version control and docs/notes, not in the package.
ISSUE_REFERENCE = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)


def issue_references(package: Path = PACKAGE) -> list[str]:
    """``module:line`` of each issue-number reference in the package's code, docstrings and messages."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if ISSUE_REFERENCE.search(line):
                found.append(f"{_module_name(path, package)}:{number}")
    return found


def test_no_issue_numbers_in_the_package() -> None:
    assert issue_references() == []


def test_the_issue_check_sees_a_reference(tmp_path: Path) -> None:
    package = _made_up_package(tmp_path, {"client/_a.py": "x = 1  # see issue 23\n",
                                          "client/_b.py": '"""Issue #7 fixed this."""\n',
                                          "client/_c.py": "tissue = 3  # issues are tracked elsewhere\n"})
    assert issue_references(package) == ["rappor.client._a:1", "rappor.client._b:1"]
