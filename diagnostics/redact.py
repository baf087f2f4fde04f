"""Scrub secrets (and, on request, identity) out of reports before they are stored or shared.

Every secret found is replaced by a numbered placeholder such as ``<SECRET-1>``; the same secret gets
the same placeholder everywhere in one report, so a reader can still see that the token in the
environment is the one in the log (the sos "cleaner" idea).  Placeholders never match the patterns
again, so redacting twice changes nothing.

What counts as a secret (sources of the formats, checked 2026-11):
- Hugging Face user access tokens ``hf_...`` (https://huggingface.co/docs/hub/security-tokens)
- GitHub ``ghp_ gho_ ghu_ ghs_ ghr_`` and ``github_pat_`` tokens
  (https://github.blog/changelog/2021-03-31-authentication-token-format-updates-are-generally-available/)
- AWS access key ids ``AKIA``/``ASIA``... (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html)
- OpenAI/Anthropic style ``sk-...`` keys, Google ``AIza...`` keys, Slack ``xox?-`` tokens and webhook URLs
  (https://api.slack.com/authentication/token-types), JSON Web Tokens (RFC 7519: three base64url parts,
  the first two starting with ``eyJ``), PEM private key blocks
- ``Authorization: Bearer|Basic|token ...`` headers (RFC 6750), credentials in URLs ``scheme://user:pass@host``
  (RFC 3986 section 3.2.1; the password part is replaced, the user name is identity, masked on request)
- environment variables and ``NAME=value`` / ``NAME: value`` text whose name ends in ``TOKEN``, ``KEY``,
  ``SECRET``... or contains ``PASSWORD``/``SECRET`` (e.g. ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``)

Identity masking (``mask_identity=True``): the host name (``<HOST>``), user names (``<USER>``) seen in
home paths (``/home/alice`` -> ``/home/<USER>``, ``/Users/alice``, ``C:\\Users\\alice``) or given in the
report, everywhere they occur as a word.

Patterns are plain Python ``re`` written without nested quantifiers (no catastrophic backtracking); they
run over user-pasted logs, so each is linear in practice.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER_RE = re.compile(r"<SECRET-\d+>")
_TRIVIAL_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null", "unset"}

# Components of a variable name that mark its value as secret when they are the LAST component
# (HF_TOKEN, OPENAI_API_KEY, db_password) ...
_SECRET_SUFFIXES = {
    "TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "APIKEY", "ACCESSKEY", "PASSPHRASE",
    "CREDENTIAL", "CREDENTIALS", "PAT", "AUTHTOKEN", "PRIVATEKEY", "SECRETKEY", "COOKIE",
}
# ... or anywhere in the name (AWS_SECRET_ACCESS_KEY_ID, PGPASSWORD_FILE is still flagged: cheap false positive).
_SECRET_INFIXES = ("PASSWORD", "SECRET", "PASSWD")
# names that look secret but are not
_NOT_SECRET_NAMES = {"PWD", "OLDPWD", "KEYMAP", "XDG_SESSION_KEY"}


def is_secret_name(name: str) -> bool:
    """True when an environment variable / config key called *name* holds a secret value."""
    n = name.strip().strip("\"'").upper()
    if n.startswith("ENV."):
        n = n[4:]
    if not n or n in _NOT_SECRET_NAMES:
        return False
    if any(s in n for s in _SECRET_INFIXES):
        return True
    parts = [p for p in re.split(r"[_.\-]+", n) if p]
    if not parts:
        return False
    if parts[-1] in _SECRET_SUFFIXES:
        return True
    # camelCase / glued forms: apiKey, authToken, HFTOKEN
    return n.endswith(("APIKEY", "TOKEN", "SECRETKEY", "ACCESSKEY")) and len(n) > 5


# --- token patterns: (kind, regex); group "s" (or the whole match) is the secret -------------------------
_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private-key", re.compile(
        r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]{0,20000}?-----END (?:[A-Z]+ )?PRIVATE KEY-----")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("huggingface-token", re.compile(r"\b(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})\b")),
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b")),
    ("openai-style-key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_\-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
]

# Authorization: Bearer xxx / Basic xxx / token xxx (header or curl -H)
_AUTH_HEADER_RE = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?\s*(?:bearer|basic|token|bot|digest)\s+)"
    r"(?P<s>[A-Za-z0-9._~+/\-=]{6,})")
_BEARER_RE = re.compile(r"(?i)(\bbearer\s+)(?P<s>[A-Za-z0-9._~+/\-]{12,}=*)")
# scheme://user:password@host  (password part is the secret)
_URL_CRED_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,20}://)(?P<user>[^\s:/@\"'<>]{1,128}):(?P<s>[^\s@/\"'<>]{1,256})@")
# NAME=value, NAME: value, "name": "value", --token value, --password=value
_KV_RE = re.compile(
    r"(?P<name>\b[A-Za-z_][A-Za-z0-9_.\-]{0,80})(?P<nq>[\"']?)(?P<sep>\s*[=:]\s*|\s*:=\s*)"
    r"(?P<q>[\"']?)(?P<s>[^\s\"',;}\]]{1,512})")
_FLAG_RE = re.compile(
    r"(?i)(--(?:[a-z0-9]+-)*(?:token|password|passwd|secret|api-key|apikey|access-key|secret-key)(?:=|\s+))"
    r"(?P<q>[\"']?)(?P<s>[^\s\"']{1,512})")

# identity
_HOME_RE = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)(?P<u>[A-Za-z0-9._\-]{1,64})")
_NOT_USERS = {"<user>", "root", "shared", "public", "default", "all users", "runner"}


@dataclass
class Replacement:
    placeholder: str
    kind: str
    where: list[str] = field(default_factory=list)
    length: int = 0


class Redactor:
    """Keeps the secret -> placeholder map for one report, so the same secret gets the same placeholder."""

    def __init__(self, mask_identity: bool = False, hosts: list[str] | None = None,
                 users: list[str] | None = None) -> None:
        self.mask_identity = mask_identity
        self._map: dict[str, Replacement] = {}
        self._where = ""
        self.hosts: list[str] = []
        self.users: list[str] = []
        for h in hosts or []:
            self.add_host(h)
        for u in users or []:
            self.add_user(u)
        self.identity_hits: dict[str, int] = {"<HOST>": 0, "<USER>": 0}

    # --- identity ---------------------------------------------------------------------------------------
    def add_host(self, host: str | None) -> None:
        if not host or not isinstance(host, str):
            return
        h = host.strip()
        if len(h) < 3 or h.lower() in {"localhost", "<host>"} or h.startswith("<"):
            return
        for cand in (h, h.split(".")[0]):
            if len(cand) >= 3 and cand not in self.hosts and cand.lower() != "localhost":
                self.hosts.append(cand)
        self.hosts.sort(key=len, reverse=True)

    def add_user(self, user: str | None) -> None:
        if not user or not isinstance(user, str):
            return
        u = user.strip()
        if len(u) < 2 or u.lower() in _NOT_USERS or u.startswith("<"):
            return
        if u not in self.users:
            self.users.append(u)
            self.users.sort(key=len, reverse=True)

    def collect_identity(self, text: str) -> None:
        for m in _HOME_RE.finditer(text):
            self.add_user(m.group("u"))

    # --- secrets ----------------------------------------------------------------------------------------
    def placeholder(self, secret: str, kind: str) -> str:
        if PLACEHOLDER_RE.fullmatch(secret):
            return secret
        rep = self._map.get(secret)
        if rep is None:
            rep = Replacement(f"<SECRET-{len(self._map) + 1}>", kind, [], len(secret))
            self._map[secret] = rep
        if self._where and self._where not in rep.where:
            rep.where.append(self._where)
        return rep.placeholder

    def _sub_group(self, m: re.Match[str], kind: str) -> str:
        s = m.group("s")
        if _looks_like_non_secret(s):
            return m.group(0)
        start, end = m.span("s")
        base = m.start(0)
        whole = m.group(0)
        return whole[: start - base] + self.placeholder(s, kind) + whole[end - base:]

    def text(self, text: str, where: str = "") -> str:
        if not isinstance(text, str) or not text:
            return text
        self._where = where
        out = text
        for kind, rx in _TOKEN_PATTERNS:
            out = rx.sub(lambda m, k=kind: self.placeholder(m.group(0), k), out)
        out = _AUTH_HEADER_RE.sub(lambda m: self._sub_group(m, "authorization-header"), out)
        out = _BEARER_RE.sub(lambda m: self._sub_group(m, "bearer-token"), out)
        out = _URL_CRED_RE.sub(lambda m: self._sub_group(m, "url-password"), out)
        out = _FLAG_RE.sub(lambda m: self._sub_group(m, "command-line-secret"), out)

        def kv(m: re.Match[str]) -> str:
            if not is_secret_name(m.group("name")):
                return m.group(0)
            return self._sub_group(m, "secret-variable")

        out = _KV_RE.sub(kv, out)
        if self.mask_identity:
            out = self._identity(out)
        return out

    def env_value(self, name: str, value: str, where: str = "") -> str:
        """The value of an environment variable / fact called *name*: all of it is secret if the name says so."""
        if isinstance(value, str) and is_secret_name(name) and value.strip().lower() not in _TRIVIAL_VALUES \
                and not PLACEHOLDER_RE.fullmatch(value) and not _looks_like_non_secret(value):
            self._where = where
            return self.placeholder(value, "secret-variable")
        return self.text(value, where)

    def _identity(self, text: str) -> str:
        def home(m: re.Match[str]) -> str:
            u = m.group("u")
            if u.lower() in _NOT_USERS or u.startswith("<"):
                return m.group(0)
            self.identity_hits["<USER>"] += 1
            return m.group(0)[: m.start("u") - m.start(0)] + "<USER>"

        out = _HOME_RE.sub(home, text)
        for h in self.hosts:
            rx = re.compile(r"(?<![A-Za-z0-9_\-.])" + re.escape(h) + r"(?![A-Za-z0-9_\-])")
            out, n = rx.subn("<HOST>", out)
            self.identity_hits["<HOST>"] += n
        for u in self.users:
            rx = re.compile(r"(?<![A-Za-z0-9_\-.])" + re.escape(u) + r"(?![A-Za-z0-9_\-])")
            out, n = rx.subn("<USER>", out)
            self.identity_hits["<USER>"] += n
        return out

    def replacements(self) -> list[dict[str, Any]]:
        """What was replaced, without the secrets themselves (for the share preview)."""
        return [{"placeholder": r.placeholder, "kind": r.kind, "where": list(r.where), "length": r.length}
                for r in self._map.values()]


def _looks_like_non_secret(value: str) -> bool:
    v = value.strip().strip("\"'")
    if v.lower() in _TRIVIAL_VALUES:
        return True
    if PLACEHOLDER_RE.fullmatch(v) or v in {"<HOST>", "<USER>", "<REDACTED>"} or set(v) <= {"*", "x", "X", "."}:
        return True
    # references to another variable are not the secret itself: $HF_TOKEN, ${HF_TOKEN}, %HF_TOKEN%
    return v.startswith("$") or (v.startswith("%") and v.endswith("%"))


def redact_text(text: str, mask_identity: bool = False, *, redactor: Redactor | None = None) -> str:
    """Return *text* with secrets (and optionally host/user identity) replaced by placeholders."""
    r = redactor or Redactor(mask_identity=mask_identity)
    if mask_identity and redactor is None:
        r.collect_identity(text)
    return r.text(text)


def _walk(obj: Any, r: Redactor, path: str, parent_key: str | None = None) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            if isinstance(v, str) and isinstance(k, str) and (k.startswith("env.") or parent_key == "env"):
                out[k] = r.env_value(k, v, p)
            else:
                out[k] = _walk(v, r, p, k if isinstance(k, str) else None)
        return out
    if isinstance(obj, list):
        return [_walk(v, r, f"{path}[{i}]", parent_key) for i, v in enumerate(obj)]
    if isinstance(obj, str):
        return r.text(obj, path)
    return obj


def _collect(obj: Any, r: Redactor) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            _collect(v, r)
    elif isinstance(obj, list):
        for v in obj:
            _collect(v, r)
    elif isinstance(obj, str):
        r.collect_identity(obj)


def _identity_seed(report: dict[str, Any], r: Redactor) -> None:
    r.add_host(report.get("host"))
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    for key in ("host.name", "host.hostname"):
        r.add_host(facts.get(key))
    for key in ("user", "username"):
        r.add_user(report.get(key))
    for key in ("user.name", "env.USER", "env.LOGNAME"):
        r.add_user(facts.get(key))
    _collect(report, r)


def preview_report(report: dict[str, Any], mask_identity: bool = False) -> dict[str, Any]:
    """What will be shared: {"report": redacted copy, "replacements": [...], "identity": {...}}.

    ``replacements`` lists each placeholder with the kind of secret and where it was found (never the
    secret); ``identity`` says how many host and user occurrences were masked.
    """
    r = Redactor(mask_identity=mask_identity)
    if mask_identity:
        _identity_seed(report, r)
    red = _walk(copy.deepcopy(report), r, "")
    return {"report": red, "replacements": r.replacements(),
            "identity": dict(r.identity_hits) if mask_identity else {}}


def redact_report(report: dict[str, Any], mask_identity: bool = False) -> dict[str, Any]:
    """Return a redacted deep copy of *report* (the input is not modified)."""
    return preview_report(report, mask_identity)["report"]
