"""`--output` placement: checked before the job, never replacing a file, never following a link, atomic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imageforge.cli.output_placement import OutputFolder, OutputPlacementError
from imageforge.contract import InputError


@pytest.fixture
def job_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs" / "0123"
    (folder / "upscale").mkdir(parents=True)
    (folder / "upscale.png").write_bytes(b"new result")
    (folder / "depth.exr").write_bytes(b"new depth")
    (folder / "depth_metadata.json").write_bytes(b"{}")
    for number in (1, 2):
        (folder / "upscale" / f"frame_{number:04d}.png").write_bytes(f"new frame {number}".encode())
    return folder


def test_a_free_name_is_used_as_is(tmp_path, job_folder):
    output = OutputFolder.checked(tmp_path / "out" / "nested")
    placement = output.place({"upscale": job_folder / "upscale.png"})
    assert placement.paths == {"upscale": tmp_path / "out" / "nested" / "upscale.png"}
    assert placement.paths["upscale"].read_bytes() == b"new result"
    assert placement.taken == ()
    assert sorted(os.listdir(tmp_path / "out" / "nested")) == ["upscale.png"]  # no temporary left


def test_the_input_in_the_output_folder_is_never_replaced(tmp_path, job_folder):
    folder = tmp_path / "D"
    folder.mkdir()
    (folder / "upscale.png").write_bytes(b"the user's input")
    for overwrite in (False, True):
        placed = OutputFolder.checked(folder, inputs=[folder / "upscale.png"], overwrite=overwrite).place(
            {"upscale": job_folder / "upscale.png"}
        )
        assert (folder / "upscale.png").read_bytes() == b"the user's input"
        assert placed.paths["upscale"].name == "upscale (2).png"  # with --overwrite: the earlier copy, replaced
        assert placed.paths["upscale"].read_bytes() == b"new result"


def test_an_existing_file_is_kept_and_the_whole_set_shares_one_number(tmp_path, job_folder):
    out = tmp_path / "out"
    out.mkdir()
    (out / "depth_metadata.json").write_bytes(b"earlier run")
    (out / "depth (2).exr").write_bytes(b"earlier run 2")
    placed = OutputFolder.checked(out).place(
        {"depth": job_folder / "depth.exr", "depth_metadata": job_folder / "depth_metadata.json"}
    )
    assert {key: path.name for key, path in placed.paths.items()} == {
        "depth": "depth (3).exr",
        "depth_metadata": "depth_metadata (3).json",
    }
    assert placed.taken == (out / "depth_metadata.json",)
    assert (out / "depth_metadata.json").read_bytes() == b"earlier run"
    assert (out / "depth (2).exr").read_bytes() == b"earlier run 2"


def test_overwrite_replaces_a_file_but_a_link_only_as_a_link(tmp_path, job_folder):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "precious.png"
    elsewhere.write_bytes(b"another file")
    (out / "upscale.png").symlink_to(elsewhere)
    (out / "depth.exr").write_bytes(b"old depth")

    kept = OutputFolder.checked(out).place({"upscale": job_folder / "upscale.png"})
    assert kept.paths["upscale"].name == "upscale (2).png"  # without --overwrite a link is a taken name
    assert elsewhere.read_bytes() == b"another file"

    replaced = OutputFolder.checked(out, overwrite=True).place(
        {"upscale": job_folder / "upscale.png", "depth": job_folder / "depth.exr"}
    )
    assert replaced.paths == {"upscale": out / "upscale.png", "depth": out / "depth.exr"}
    assert not (out / "upscale.png").is_symlink()
    assert (out / "upscale.png").read_bytes() == b"new result"
    assert (out / "depth.exr").read_bytes() == b"new depth"
    assert elsewhere.read_bytes() == b"another file"  # the link's target was never written through


def test_a_dangling_link_is_a_taken_name(tmp_path, job_folder):
    out = tmp_path / "out"
    out.mkdir()
    (out / "upscale.png").symlink_to(tmp_path / "would-be-created.png")
    placed = OutputFolder.checked(out).place({"upscale": job_folder / "upscale.png"})
    assert placed.paths["upscale"].name == "upscale (2).png"
    assert not (tmp_path / "would-be-created.png").exists()


def test_a_frame_folder_lands_whole_and_is_never_merged_even_with_overwrite(tmp_path, job_folder):
    out = tmp_path / "out"
    (out / "upscale").mkdir(parents=True)
    (out / "upscale" / "frame_0001.png").write_bytes(b"earlier frame 1")
    (out / "upscale" / "frame_0009.png").write_bytes(b"earlier frame 9")
    placed = OutputFolder.checked(out, overwrite=True).place({"upscale": job_folder / "upscale"})
    assert placed.paths["upscale"] == out / "upscale (2)"
    assert sorted(os.listdir(out / "upscale (2)")) == ["frame_0001.png", "frame_0002.png"]
    assert sorted(os.listdir(out / "upscale")) == ["frame_0001.png", "frame_0009.png"]
    assert (out / "upscale" / "frame_0001.png").read_bytes() == b"earlier frame 1"
    assert sorted(os.listdir(out)) == ["upscale", "upscale (2)"]


def test_batch_names_keep_two_photos_from_different_folders_apart(tmp_path, job_folder):
    output = OutputFolder.checked(tmp_path / "out")
    first = output.place({"upscale": job_folder / "upscale.png"}, names={"upscale": "photo.png"})
    second = output.place({"upscale": job_folder / "depth.exr"}, names={"upscale": "photo.png"})
    assert first.paths["upscale"].name == "photo.png"
    assert second.paths["upscale"].name == "photo (2).png"
    assert first.paths["upscale"].read_bytes() == b"new result"
    assert second.paths["upscale"].read_bytes() == b"new depth"


def test_output_that_is_a_file_or_the_input_is_refused(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    frames = tmp_path / "frames"
    frames.mkdir()
    with pytest.raises(InputError, match="is a file"):
        OutputFolder.checked(a_file)
    with pytest.raises(InputError, match="is a file"):
        OutputFolder.checked(a_file / "sub")
    with pytest.raises(InputError, match="is the job's input"):
        OutputFolder.checked(frames, inputs=[frames])
    with pytest.raises(InputError, match="is the job's input"):
        OutputFolder.checked(tmp_path / "frames" / ".", inputs=[frames / "shot_####.png"])
    (tmp_path / "link").symlink_to(frames)
    with pytest.raises(InputError, match="is the job's input"):
        OutputFolder.checked(tmp_path / "link", inputs=[frames])
    assert OutputFolder.checked(frames / "out", inputs=[frames]).path == frames / "out"


def _unwritable_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        return folder
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("running as root without mount: no folder root cannot write to")
    return folder


def test_an_unwritable_output_is_refused_before_the_job(tmp_path):
    folder = _unwritable_folder(tmp_path)
    try:
        with pytest.raises(InputError, match="is not writable"):
            OutputFolder.checked(folder / "results")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(folder)], check=False)
        else:
            folder.chmod(0o700)


FULL_DISK_CHILD = """
import resource, signal, sys
from pathlib import Path
from imageforge.cli.output_placement import OutputFolder, OutputPlacementError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, like ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
source, output = Path(sys.argv[1]), Path(sys.argv[2])
try:
    OutputFolder.checked(output).place({"upscale": source / "upscale.png", "frames": source / "upscale"})
except OutputPlacementError as error:
    print(error)
    sys.exit(3)
"""


def test_a_full_disk_leaves_no_file_under_a_result_name_and_no_temporary(tmp_path, job_folder):
    (job_folder / "upscale" / "frame_0002.png").write_bytes(os.urandom(256 * 1024))  # over the child's limit
    out = tmp_path / "out"
    completed = subprocess.run(
        [sys.executable, "-c", FULL_DISK_CHILD, str(job_folder), str(out)], capture_output=True, text=True
    )
    assert completed.returncode == 3, completed.stderr
    assert "the disk is full" in completed.stdout
    assert "the result is still in" in completed.stdout
    assert os.listdir(out) == []  # neither upscale.png (it fitted) nor a truncated frame folder, no temporaries


def test_the_file_limit_really_truncates_without_the_placement(tmp_path):
    """The fault above is real: a plain copy under the same limit leaves a truncated file behind."""
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(256 * 1024))
    child = (
        "import resource, shutil, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
    )
    completed = subprocess.run([sys.executable, "-c", child, str(source), str(tmp_path / "copy.bin")])
    assert completed.returncode != 0
    assert (tmp_path / "copy.bin").stat().st_size == 64 * 1024


def test_a_race_for_the_name_never_replaces_the_newcomer(tmp_path, job_folder, monkeypatch):
    out = tmp_path / "out"
    output = OutputFolder.checked(out)
    real_stage = OutputFolder._stage

    def stage_then_someone_writes(self, source, target):
        staged = real_stage(self, source, target)
        target.write_bytes(b"written meanwhile by another program")
        return staged

    monkeypatch.setattr(OutputFolder, "_stage", stage_then_someone_writes)
    with pytest.raises(OutputPlacementError, match="appeared while"):
        output.place({"upscale": job_folder / "upscale.png"})
    assert (out / "upscale.png").read_bytes() == b"written meanwhile by another program"
    assert os.listdir(out) == ["upscale.png"]


def test_overwrite_without_output_is_a_usage_error(capsys):
    from imageforge.cli.main import main

    assert main(["run", "upscale-image", "input=photo.png", "--overwrite"]) == 2
    assert capsys.readouterr().err.strip() == (
        "imageforge: --overwrite only applies to the files --output copies; give --output FOLDER too."
    )
