"""The device-access reader (diagnostics/parsers/shell_access.py): `ls -l /dev/kfd`, `stat`, `id`, `groups`.

Every fixture under tests/fixtures/dumps/shell_access/ is text someone pasted into a public report, with a sidecar
naming the source and the facts the reader must (``expect``) and must not (``absent``) establish.  The reader runs
on every paste (EMBEDDED_ALWAYS), so the registry must add the same facts when another tool's output is the main
part, and the KB must reason from them the way it does from the live probes."""
from __future__ import annotations

from pathlib import Path

import pytest

from diagnostics import service
from diagnostics.parsers import shell_access
from tests import dump_fixtures

SIDECARS = dump_fixtures.sidecars("shell_access")


def test_enough_real_fixtures():
    assert len(SIDECARS) >= 6


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_fixture(sidecar: Path):
    dump_fixtures.check(shell_access, sidecar)


def test_bare_id_is_the_process_and_id_user_the_database():
    own = shell_access.parse("$ id\nuid=1000(alice) gid=1000(alice) groups=1000(alice),4(adm),44(video),27(sudo)\n")
    assert own.facts["user.uid"] == 1000 and own.facts["user.is_root"] is False
    assert own.facts["user.groups"] == ["alice", "adm", "video", "sudo"]
    assert own.facts["user.in_render_group"] is False and own.facts["user.in_video_group"] is True
    db = shell_access.parse("$ id alice\nuid=1000(alice) gid=1000(alice) groups=1000(alice),44(video),109(render)\n")
    assert db.facts["user.db_groups"] == ["alice", "video", "render"]
    assert "user.groups" not in db.facts and "user.uid" not in db.facts
    root = shell_access.parse("uid=0(root) gid=0(root) groups=0(root)\n")
    assert root.facts["user.is_root"] is True


def test_added_but_not_logged_in_again():
    """`groups` (this login) without render, `groups alice` (the database) with it: usermod ran, no new login."""
    text = "$ groups\nalice adm cdrom sudo video\n$ groups alice\nalice : alice adm cdrom sudo video render\n"
    f = shell_access.parse(text).facts
    assert f["user.groups_pending_relogin"] == ["render"]
    assert f["user.in_render_group"] is False


def test_open_modes_do_not_make_the_group_decide():
    world = shell_access.parse("crw-rw-rw- 1 root render 235, 0 Apr  8 16:46 /dev/kfd\n").facts
    acl = shell_access.parse("crw-rw----+ 1 root render 226, 128 Dec  1 10:00 /dev/dri/renderD128\n").facts
    closed = shell_access.parse("crw-rw---- 1 root render 226, 128 2024-12-01 10:00 /dev/dri/renderD128\n").facts
    assert world == {"kfd.present": True}
    assert acl == {"dri.render_nodes": ["/dev/dri/renderD128"]}
    assert closed == {"dri.render_nodes": ["/dev/dri/renderD128"], "dri.group": "render"}
    assert shell_access.parse("ls: cannot access '/dev/kfd': No such file or directory\n").facts == {"kfd.present": False}


def test_prose_and_other_files_are_not_read():
    text = ("I ran groups and it says I am in video.\ngroups\nI think so\n"
            "crw-rw---- 1 root video 226, 0 Apr  8 16:46 /dev/dri/card0\n"
            "-rw-r--r-- 1 root root 1234 Apr  8 16:46 /dev/kfd.bak\n")
    res = shell_access.parse(text)
    assert res.facts == {}, res.facts   # a sentence under `groups`, a card node, a regular file named like the device


def test_hostile_input_never_raises():
    for text in ("\x00" * 5000, "crw-rw---- " * 10000, "groups\n" * 3000, "uid=" + "9" * 5000 + "(a) gid=1(a)\n",
                 "é" * 100000):
        res = shell_access.parse(text)
        assert isinstance(res.facts, dict)


def test_the_kb_reasons_from_a_pasted_access_check():
    """A user who followed a guide's `usermod` but whose login lacks render pastes the two checks every guide asks
    for: the cause is the group, read from facts alone (no error line in the paste)."""
    text = ("$ groups\nalice adm cdrom sudo dip plugdev video lpadmin\n$ ls -l /dev/kfd /dev/dri/renderD128\n"
            "crw-rw---- 1 root render 236,   0 Dec  1 10:00 /dev/kfd\n"
            "crw-rw---- 1 root render 226, 128 Dec  1 10:00 /dev/dri/renderD128\n"
            "$ python3 -c \"import torch; print(torch.cuda.is_available())\"\nFalse\n")
    rep = service.diagnose_text(logs=[("check.txt", text)])
    confirmed = [d["id"] for d in rep["diagnoses"] if d.get("basis") != "possible"]
    assert confirmed and confirmed[0] == "user-not-in-render-video-group", confirmed
    member = text.replace("plugdev video lpadmin", "plugdev video render lpadmin")
    rep = service.diagnose_text(logs=[("check.txt", member)])
    assert "user-not-in-render-video-group" not in [d["id"] for d in rep["diagnoses"] if d.get("basis") != "possible"]


@pytest.mark.parametrize("line", [
    # coreutils' zh_CN translation, as pasted in Chinese Linux notes (e.g. "用户id=1000(sevenwate) 组id=1000(sevenwate)
    # 组=1000(sevenwate),24(cdrom),...,44(video)") and the older form that kept uid/gid ("uid=1000(ufo) gid=1000(ufo) 组=...")
    "用户id=1000(u) 组id=1000(u) 组=1000(u),4(adm),24(cdrom),27(sudo),44(video)",
    "uid=1000(u) gid=1000(u) 组=1000(u),4(adm),24(cdrom),27(sudo),44(video)",
])
def test_id_in_a_chinese_locale(line):
    f = shell_access.parse("$ id\n" + line + "\n$ ls -l /dev/kfd\ncrw-rw---- 1 root render 235, 0 12月  4 09:12 /dev/kfd\n").facts
    assert f["user.uid"] == 1000 and f["user.groups"] == ["u", "adm", "cdrom", "sudo", "video"]
    assert f["user.in_render_group"] is False and f["kfd.group"] == "render"
