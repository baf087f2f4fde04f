"""The access checks people paste: ``groups``, ``id``, ``ls -l /dev/kfd /dev/dri/renderD128``, ``stat /dev/kfd``.

Every ROCm guide and maintainer asks for these when the GPU is "not found" (``ls -l /dev/kfd`` to see the device's
group, ``groups`` to see the login's), and what comes back is read for the same facts the live probes record:

    crw-rw---- 1 root render 238, 0 Sep  2 15:45 /dev/kfd           kfd.present, kfd.group
    crw-rw----+ 1 root render 226, 128 ... /dev/dri/renderD128      dri.render_nodes ('+': an ACL, e.g. uaccess)
    Access: (0660/crw-rw----)  Uid: (    0/    root)   Gid: (  989/  render)     (stat, after "File: /dev/kfd")
    uid=1000(alice) gid=1000(alice) groups=1000(alice),4(adm),44(video)          user.uid, user.groups
    $ groups                 alice adm cdrom sudo video                          user.groups (this login's)
    $ groups alice           alice : alice adm video render                      user.db_groups (the database's)

Only the lines these tools print are read, each tied to its device path or its own shape, so the reader runs on
every paste (the registry's EMBEDDED_ALWAYS).  Facts that decide a diagnosis are set only when the text shows them:
the device's group counts (``kfd.group``) only where its mode keeps others out (``crw-rw-rw-`` opens for anyone,
a ``+`` ACL may grant the login), and ``user.is_root`` comes from a uid, or from a group list without ``root``.
"""
from __future__ import annotations

import re
from typing import Any

from ..textnorm import clean_log
from .base import Opening, ParseResult

MAX_LINES = 20_000
GPU_GROUPS = ("render", "video")

# `ls -l` (also `ll`, `ls -la /dev | grep kfd`, which prints the bare name): mode, links, owner, group, major, minor,
# a date in any locale (one to three words), the path
_LS = re.compile(r"^(?P<mode>c[-r][-w][-xsS][-r][-w][-xsS][-r][-w][-xtT])(?P<acl>[+.@]?)`?\s+\d+\s+(?P<owner>\S+)\s+"
                 r"(?P<group>\S+)\s+\d+,\s*\d+\s+(?:\S+\s+){1,3}?\S+\s+(?P<path>(?:/dev/)?(?:kfd|dri/renderD\d+|renderD\d+))\s*$")
_STAT_FILE = re.compile(r"^File:\s+['‘]?(?P<path>/dev/(?:kfd|dri/renderD\d+))['’]?\s*$")
_STAT_ACCESS = re.compile(r"^Access:\s+\(\d{4}/(?P<mode>c[-rwxsStT]{9})\)\s+Uid:\s+\(\s*\d+/\s*(?P<owner>\S+)\)\s+"
                          r"Gid:\s+\(\s*(?P<gid>\d+)/\s*(?P<group>\S+)\)")
# (coreutils in zh_CN prints "用户id=1000(u) 组id=1000(u) 组=1000(u),44(video)", older releases "uid=… gid=… 组=…")
_ID = re.compile(r"^(?:uid|用户id)=(?P<uid>\d+)\((?P<user>[^)]*)\)\s+(?:gid|组id)=\d+\([^)]*\)"
                 r"(?:\s+(?:groups|组)=(?P<groups>\S+))?")
# a shell prompt before the command: "$ ", "alice@box:~$ ", "[root@host dri]# ", "root:~# ", "PS> "
_PROMPT = r"(?:\[[^\]]{1,80}\][$#]\s*|\S{0,80}[$#>]\s*)?"
_ID_CMD = re.compile(r"^" + _PROMPT + r"id(?:\s+(?P<user>[A-Za-z_][\w.-]*))?\s*$")
_GROUPS_CMD = re.compile(r"^" + _PROMPT + r"groups(?:\s+(?P<user>[A-Za-z_][\w.-]*))?\s*$")
# group names as useradd/groupadd accept them by default (lower case; a sentence under `groups` is not a list)
_GROUPS_OUT = re.compile(r"^(?:(?P<user>[a-z_][a-z0-9_.-]*\$?)\s+:\s+)?(?P<groups>[a-z_][a-z0-9_.-]*\$?(?:\s+[a-z_][a-z0-9_.-]*\$?)*)$")
_NO_KFD = re.compile(r"^(?:ls|stat): cannot (?:access|stat) ['‘]?/dev/kfd['’]?: No such file or directory")


def _group_names(field: str) -> list[str]:
    """``1000(alice),4(adm),44(video)`` -> names (a gid without a name stays a number)."""
    out = []
    for item in field.split(","):
        m = re.fullmatch(r"(\d+)(?:\(([^)]*)\))?", item.strip())
        if m:
            out.append(m.group(2) or m.group(1))
    return out


def _device(facts: dict[str, Any], path: str, mode: str, acl: str, group: str) -> None:
    closed = mode[7:9] != "rw" and acl != "+"   # others cannot open it, and no ACL may let the login in
    if path.endswith("kfd"):
        facts["kfd.present"] = True
        if closed:
            facts["kfd.group"] = group
    else:
        node = path if path.startswith("/dev/") else "/dev/dri/" + path
        nodes = facts.setdefault("dri.render_nodes", [])
        if node not in nodes:
            nodes.append(node)
        if closed and "dri.group" not in facts:
            facts["dri.group"] = group


def _membership(facts: dict[str, Any], groups: list[str], own: bool) -> None:
    if own:
        facts["user.groups"] = groups
        facts["user.in_render_group"] = "render" in groups
        facts["user.in_video_group"] = "video" in groups
        if "user.is_root" not in facts and "root" not in groups:
            facts["user.is_root"] = False   # root's own group list always holds root (gid 0)
    else:
        facts["user.db_groups"] = groups


def detect(text: str) -> float:
    found = 0
    for line in clean_log(text[:200_000]).split("\n")[:MAX_LINES]:
        s = line.strip().strip("`").strip()
        if _LS.match(s) or _ID.match(s) or _STAT_ACCESS.match(s):
            found += 1
    return 0.0 if not found else 0.45 if found == 1 else 0.55


OPENING = Opening("shell_access", "device access check", empty=False)


def parse(text: str) -> ParseResult:
    return OPENING.parse(text, _parse_into)


parse_embedded = parse   # every form it reads is tied to its tool's own line: inside another dump it reads the same


def _parse_into(text: str, res: ParseResult) -> None:
    lines = [ln.strip().strip("`").strip() for ln in clean_log(text).split("\n")[:MAX_LINES]]
    facts: dict[str, Any] = {}
    stat_path = None
    for i, s in enumerate(lines):
        if not s or len(s) > 4000:
            continue
        m = _LS.match(s)
        if m:
            _device(facts, m.group("path"), m.group("mode"), m.group("acl"), m.group("group"))
            continue
        m = _STAT_FILE.match(s)
        if m:
            stat_path = m.group("path")
            continue
        m = _STAT_ACCESS.match(s)
        if m and stat_path:
            _device(facts, stat_path, m.group("mode"), "", m.group("group"))
            stat_path = None
            continue
        if _NO_KFD.match(s):
            facts["kfd.present"] = False
            continue
        m = _ID.match(s)
        if m:
            cmd = _ID_CMD.match(lines[i - 1]) if i else None
            own = not (cmd and cmd.group("user"))    # `id alice` reads the database, a bare `id` the process
            uid = int(m.group("uid"))
            if own:
                facts["user.uid"] = uid
                facts["user.is_root"] = uid == 0
            if m.group("groups"):
                _membership(facts, _group_names(m.group("groups")), own)
            continue
        m = _GROUPS_CMD.match(s)
        if m and i + 1 < len(lines):
            out = _GROUPS_OUT.match(lines[i + 1])
            if out and not _GROUPS_CMD.match(lines[i + 1]):
                names = out.group("groups").split()
                own = not (m.group("user") or out.group("user"))
                _membership(facts, names, own)
    if "user.groups" in facts and "user.db_groups" in facts:
        facts["user.groups_pending_relogin"] = [g for g in GPU_GROUPS
                                                if g in facts["user.db_groups"] and g not in facts["user.groups"]]
    if not facts:
        res.notes.append("no device-access output recognised (ls -l /dev/kfd, stat, id, groups)")
        return
    res.facts.update(facts)
