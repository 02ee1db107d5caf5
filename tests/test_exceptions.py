"""rappor.exceptions: each class means one thing, refines the builtin it is, and survives pickling (worker processes)."""

from __future__ import annotations

import errno
import inspect
import pickle
from pathlib import Path

import numpy as np
import pytest

import rappor.exceptions as exceptions
from rappor import (
    Aggregate,
    CountOverflowError,
    InvalidParameterError,
    MissingDependencyError,
    Params,
    RapporError,
    RapporIOError,
    ReportFormatError,
    write_key_file,
)
from rappor.formats import read_counts, read_params


def test_hierarchy_drawn_in_the_module_docstring_is_the_real_one() -> None:
    doc = exceptions.__doc__ or ""
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        bases = ", ".join(base.__name__ for base in cls.__bases__)
        assert f"{name}({bases})" in doc or f"── {name}" in doc, name


@pytest.mark.parametrize(("cls", "builtin"), [(RapporIOError, OSError), (CountOverflowError, OverflowError),
                                               (MissingDependencyError, ImportError),
                                               (ReportFormatError, ValueError),
                                               (InvalidParameterError, ValueError)])
def test_every_error_is_a_rappor_error_and_its_builtin(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, RapporError) and issubclass(cls, builtin)


def test_io_error_names_the_file_and_keeps_errno() -> None:
    exc = RapporIOError("cannot read file: no such file", path="in.csv", errno=errno.ENOENT)
    assert str(exc) == "in.csv: cannot read file: no such file"
    assert (exc.errno, exc.filename, exc.path, exc.message) == (errno.ENOENT, "in.csv", "in.csv",
                                                                "cannot read file: no such file")
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), str(back), back.errno) == (RapporIOError, str(exc), errno.ENOENT)


def test_missing_dependency_names_the_module() -> None:
    exc = MissingDependencyError("Parquet reports need pyarrow: pip install 'rappor[parquet]'.", name="pyarrow")
    assert exc.name == "pyarrow"
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)


def test_a_missing_file_is_an_io_error_not_a_format_error(tmp_path: Path) -> None:
    # Issue 15: ReportFormatError used to stand for unreadable files too.
    with pytest.raises(RapporIOError) as info:
        read_params(tmp_path / "nope.csv")
    assert not isinstance(info.value, ReportFormatError)
    assert info.value.errno == errno.ENOENT and info.value.filename == str(tmp_path / "nope.csv")


def test_bad_content_is_a_format_error_not_an_io_error(tmp_path: Path) -> None:
    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n8,2,x,0.5,0.75,0.5\n")
    with pytest.raises(ReportFormatError) as info:
        read_params(tmp_path / "params.csv")
    assert not isinstance(info.value, OSError)


def test_an_existing_key_file_is_an_io_error(tmp_path: Path) -> None:
    # Issue 15: "key file exists" was a ReportFormatError; it is FileExistsError's errno.
    write_key_file(tmp_path / "key", bytes(32))
    with pytest.raises(RapporIOError, match="already exists") as info:
        write_key_file(tmp_path / "key", bytes(range(32)))
    assert info.value.errno == errno.EEXIST


def test_counts_beyond_int64_are_an_overflow_not_a_parameter_error() -> None:
    # Issue 15: the int64 overflow of a merge was an InvalidParameterError.
    params = Params(k=1, h=1, m=1, p=0.5, q=0.75, f=0.5)
    big = Aggregate(params=params, counts=np.array([[2**62, 0]]))
    with pytest.raises(CountOverflowError, match="exceed 2\\*\\*63 - 1") as info:
        big.merge(big)
    assert not isinstance(info.value, InvalidParameterError)


def test_a_count_beyond_int64_in_a_file_is_a_format_error(tmp_path: Path) -> None:
    params = Params(k=1, h=1, m=1, p=0.5, q=0.75, f=0.5)
    (tmp_path / "counts.csv").write_text(f"{2**63},0\n")
    with pytest.raises(ReportFormatError, match="counts.csv:1: expected a count of at most 2\\*\\*63 - 1"):
        read_counts(tmp_path / "counts.csv", params)


def test_every_public_error_class_is_documented() -> None:
    for name in exceptions.__all__:
        assert inspect.getdoc(getattr(exceptions, name)), name


@pytest.mark.parametrize("argv", [
    ["simulate", "--clients", "200", "--unique", "5", "--no-report", "--out", "{file}"],
    ["simulate-assoc", "--clients", "200", "--unique", "5", "--no-report", "--out", "{file}"],
    ["decode-assoc", "--metric-name", "m", "--schema", "{assoc}/rappor-vars.csv", "--params-dir", "{assoc}",
     "--reports", "{assoc}/reports.csv", "--var1", "domain", "--var2", "flag..HTTPS", "--map1",
     "{assoc}/domain_map.csv", "--create-bool-map", "--output-dir", "{file}"],
])
def test_an_output_directory_that_is_a_file_is_an_io_error(tmp_path: Path, argv: list[str]) -> None:
    """Every command that writes into a directory refuses a regular file there with one error, an I/O
    error (simulate-assoc and decode-assoc --output-dir raised a ReportFormatError of their own)."""
    from rappor.cli._main import build_parser

    target = tmp_path / "file"
    target.write_text("x")
    assoc = Path(__file__).parent / "data" / "assoc_google"
    args = build_parser().parse_args([a.format(file=target, assoc=assoc) for a in argv])
    with pytest.raises(RapporIOError, match="not a directory") as caught:
        args._run(args)
    assert caught.value.errno == errno.ENOTDIR and target.read_text() == "x"


@pytest.mark.parametrize("argv", [
    ["simulate", "--clients", "200", "--unique", "5", "--no-report", "--out", "-"],
    ["simulate-assoc", "--clients", "200", "--unique", "5", "--no-report", "--out", "-"],
    ["decode-assoc", "--metric-name", "m", "--schema", "{assoc}/rappor-vars.csv", "--params-dir", "{assoc}",
     "--reports", "{assoc}/reports.csv", "--var1", "domain", "--var2", "flag..HTTPS", "--map1",
     "{assoc}/domain_map.csv", "--create-bool-map", "--output-dir", "-"],
])
def test_an_output_directory_named_dash_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """'-' means standard output everywhere else: as an output directory it is refused, exit 1,
    and no directory called '-' appears (decode-assoc --output-dir - created one)."""
    from rappor.cli._main import main

    monkeypatch.chdir(tmp_path)
    assoc = Path(__file__).parent / "data" / "assoc_google"
    assert main([a.format(assoc=assoc) for a in argv]) == 1
    assert "standard output" in capsys.readouterr().err
    assert not (tmp_path / "-").exists()
