"""Scrub secrets (and, on request, identity) out of reports before they are stored or shared.

One engine: a grammar of secret *shapes* (below), each rule a regular expression whose group ``s`` is the
secret.  All rules are run over the original text, the spans they find are merged (overlaps become one
span, so a token inside a ``NAME=value`` is one secret), and each distinct secret gets one numbered
placeholder such as ``<SECRET-3>``; the same secret gets the same placeholder everywhere in one report or
export, and two secrets never share one (numbering continues after the highest placeholder already in the
input, so re-redacting a stored report for export cannot reuse a number).  Placeholders never match a rule
again, so redacting twice changes nothing.

The grammar (sources of the formats, checked 2026-12):

1. Token prefixes (``_PREFIXES``): Hugging Face ``hf_``/``api_org_``
   (https://huggingface.co/docs/hub/security-tokens); GitHub ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``
   (https://github.blog/changelog/2021-03-31-authentication-token-format-updates-are-generally-available/);
   GitLab ``glpat- gldt- glrt- glptt- glcbt- glft- glimt- glsoat- gloas-``
   (https://docs.gitlab.com/ee/security/tokens/#token-prefixes); Slack ``xoxb- xoxp- xoxa- xoxo- xoxs- xoxr-
   xoxe- xapp-`` (https://api.slack.com/authentication/token-types); OpenAI/Anthropic ``sk-``/``sk-proj-``/
   ``sk-ant-``; Stripe ``sk_live_ sk_test_ rk_live_ rk_test_ whsec_``; AWS key ids ``AKIA ASIA ...``
   (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html); Google ``AIza``, ``ya29.``,
   ``GOCSPX-``; npm ``npm_``; PyPI ``pypi-``; NVIDIA NGC ``nvapi-``; Docker Hub ``dckr_pat_``; HashiCorp
   Vault ``hvs.``/``hvb.``; DigitalOcean ``dop_v1_``; Shopify ``shpat_``...; SendGrid ``SG.``; Replicate
   ``r8_``; Groq ``gsk_``; Perplexity ``pplx-``; Grafana ``glsa_``; Linear ``lin_api_``; Postman ``PMAK-``;
   Doppler ``dp.pt.``; Pulumi ``pul-``; Tailscale ``tskey-``; Supabase ``sbp_``; Databricks ``dapi``; Atlassian
   ``ATATT``; age ``AGE-SECRET-KEY-1``; Telegram bot tokens; JSON Web Tokens (RFC 7519).  Tokens have no upper
   length: a 5000-character token is removed whole.
2. Key blocks: ``-----BEGIN ... PRIVATE KEY-----`` (PKCS#1/#8, EC, DSA, OpenSSH, ENCRYPTED) and ``-----BEGIN
   PGP PRIVATE KEY BLOCK-----``, up to their END line or, when the END line is missing (a truncated paste),
   to the end of the text; PuTTY ``PuTTY-User-Key-File`` private lines.
3. URL credentials ``scheme://user:password@host`` (RFC 3986 3.2.1): the password may hold ``@``, ``/`` or
   ``%40``; the user may be empty (``redis://:pw@host``).  The user name is identity (masked on request).
4. Command-line flags: ``--token X``, ``--hf_token X``, ``--api-key=X``, ``--password X``, ``-token X`` (any
   flag whose name is a secret name), ``mysql -pPW``, ``sshpass -p PW``, ``curl -u user:pw``/``--user``.
5. Assignments: ``NAME=value``, ``NAME: value``, ``"name": "value"``, ``name = value`` (INI/TOML/YAML/JSON),
   ``export``/``set``/``setx``, PowerShell ``$env:NAME = "value"``, Dockerfile ``ENV NAME value``, where
   NAME is a secret name (``is_secret_name``); quoted values are taken whole (several words, ``,`` and
   ``;`` included), unquoted ones up to the next blank.
6. Headers: ``Authorization``/``Proxy-Authorization`` (any scheme), ``Cookie``/``Set-Cookie``, and headers
   whose name is a secret name (``X-Api-Key``, ``Private-Token``); ``Bearer <token>`` anywhere.
7. Files: ``.netrc`` (``machine h login u password p``), ``.pgpass`` lines (``host:port:db:user:password``).

Identity masking (``mask_identity=True``): the host name (``<HOST>``), user names (``<USER>``) seen in
home paths (``/home/alice`` -> ``/home/<USER>``, ``/Users/alice``, ``C:\\Users\\alice``) or given in the
report, everywhere they occur as a word.

Cost: every rule is a Python ``re`` whose work per starting position is bounded by a constant (bounded
``{m,n}`` gaps, no two adjacent unbounded quantifiers over the same characters, rules anchored on a
literal or a word start), so the whole scan is linear in the text (tests/test_redact.py measures it,
bench/bench_text.py gives the figures).
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

PLACEHOLDER_RE = re.compile(r"<SECRET-(\d{1,9})>")
_TRIVIAL_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null", "unset", "nil",
                   "undefined", "required", "optional", "xxx", "***", "<redacted>", "redacted"}

# Components of a variable name that mark its value as secret when they are the LAST component
# (HF_TOKEN, OPENAI_API_KEY, db_password) ...
_SECRET_SUFFIXES = {
    "TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "PW", "APIKEY", "ACCESSKEY", "ACCOUNTKEY",
    "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS", "PAT", "AUTHTOKEN", "PRIVATEKEY", "SECRETKEY",
    "COOKIE", "AUTH", "SIG", "APITOKEN", "ACCESSTOKEN", "REFRESHTOKEN", "SESSIONTOKEN",
}
# ... or anywhere in the name (AWS_SECRET_ACCESS_KEY_ID, PGPASSWORD_FILE is still flagged: cheap false positive).
_SECRET_INFIXES = ("PASSWORD", "SECRET", "PASSWD")
# names that look secret but are not
_NOT_SECRET_NAMES = {"PWD", "OLDPWD", "KEYMAP", "XDG_SESSION_KEY"}


def is_secret_name(name: str) -> bool:
    """True when an environment variable / config key / flag called *name* holds a secret value."""
    n = name.strip().strip("\"'").upper()
    if n.startswith("ENV."):
        n = n[4:]
    n = n.lstrip("-")
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
    return n.endswith(("APIKEY", "TOKEN", "SECRETKEY", "ACCESSKEY", "ACCOUNTKEY")) and len(n) > 5


# --------------------------------------------------------------------------------------------- the grammar
# 1. token prefixes: (name, regex body).  No upper bound on the length: a long token goes whole.
_PREFIXES: list[tuple[str, str]] = [
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent|wt)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}"),
    ("openai-style-key", r"sk-[A-Za-z0-9_\-]{20,}"),
    ("stripe-key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,}"),
    ("aws-access-key-id", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|APKA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("google-key", r"AIza[0-9A-Za-z_\-]{35}|ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{20,}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36,}"),
    ("pypi-token", r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("nvidia-ngc-key", r"nvapi-[A-Za-z0-9_\-]{40,}"),
    ("docker-token", r"dckr_pat_[A-Za-z0-9_\-]{20,}"),
    ("vault-token", r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}"),
    ("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{30,}"),
    ("groq-key", r"gsk_[A-Za-z0-9]{40,}"),
    ("perplexity-key", r"pplx-[A-Za-z0-9]{40,}"),
    ("grafana-token", r"glsa_[A-Za-z0-9_]{32,}|glc_[A-Za-z0-9+/=_]{32,}"),
    ("linear-key", r"lin_api_[A-Za-z0-9]{40,}"),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("doppler-token", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("pulumi-token", r"pul-[a-f0-9]{40}"),
    ("tailscale-key", r"tskey-[A-Za-z0-9\-]{20,}"),
    ("supabase-token", r"sbp_[a-f0-9]{40}"),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("atlassian-token", r"ATATT3[A-Za-z0-9_\-=]{50,}"),
    ("heroku-key", r"HRKU-[A-Za-z0-9_\-]{20,}"),
    ("mailgun-key", r"key-[0-9a-f]{32}"),
    ("twilio-key", r"SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("telegram-bot-token", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("webhook-url", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"
                    r"|https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}"),
]
# the first characters of every prefix: a cheap look-ahead that spares the alternation at most positions
# (20x faster on text without tokens; tests/test_redact.py checks that every prefix starts with one of them)
TOKEN_FIRST_CHARS = "ADGHPSadeghklnprstwxy0-9"
_TOKEN_RE = re.compile(rf"(?<![A-Za-z0-9])(?=[{TOKEN_FIRST_CHARS}])(?:"
                       + "|".join(f"(?P<t{i}>{body})" for i, (_, body) in enumerate(_PREFIXES)) + ")")
_TOKEN_KINDS = {f"t{i}": kind for i, (kind, _) in enumerate(_PREFIXES)}

# 2. key blocks (the END line is searched for separately: a truncated block runs to the end of the text)
_KEY_BEGIN_RE = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END_RE = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PUTTY_RE = re.compile(r"Private-Lines:[ \t]*\d{1,6}\r?\n(?P<s>(?:[A-Za-z0-9+/=]{1,128}\r?\n?){1,4096})")

# a secret name, as the head of an assignment / flag (the value sits in a look-ahead, so a name that turns
# out not to be secret consumes nothing after it: `$env:HF_TOKEN=...` still reaches HF_TOKEN)
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,100}"
_QVALUE = (r"(?:\"(?P<s>(?:[^\"\\\n]|\\.){1,4096})\""
           r"|'(?P<s2>[^'\n]{1,4096})'"
           r"|[\"']?(?P<s3>[^\s\"'][^\s]*))")

_RULES: list[tuple[str, re.Pattern[str], bool]] = [
    # (kind, regex, check the group "name" with is_secret_name)
    ("url-password", re.compile(
        r"(?i)(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@\"'<>]{0,128}):"
        r"(?P<s>[^\s\"'<>]{1,1024})@(?=[^\s@\"'<>]*(?:[\s\"'<>]|$))"), False),
    ("url-password", re.compile(
        r"(?i)(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@\"'<>]{0,128}):"
        r"(?P<s>[^\s\"'<>@]{1,1024})@"), False),
    ("authorization-header", re.compile(
        r"(?i)(?<![\w-])(?:proxy-)?authorization[\"']?[ \t]{0,16}[:=][ \t]{0,16}[\"']?"
        r"(?:(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|key|sso-key|aws4-hmac-sha256|hmac)[ \t]{1,16})?"
        r"(?P<s>[^\s\"'][^\n\"'\r]{0,8191})"), False),
    ("cookie-header", re.compile(
        r"(?i)(?<![\w-])(?:set-)?cookie2?[\"']?[ \t]{0,16}:[ \t]{0,16}[\"']?(?P<s>[^\s\"'][^\n\"'\r]{0,8191})"), False),
    ("bearer-token", re.compile(r"(?i)(?<![\w-])bearer[ \t]{1,16}(?P<s>[A-Za-z0-9._~+/\-]{12,}=*)"), False),
    ("netrc-password", re.compile(
        r"(?<![\w-])(?:machine[ \t]+\S{1,256}|default|login[ \t]+\S{1,256})"
        r"(?:\s{1,64}(?:login|account|port|macdef)[ \t]+\S{1,256}){0,4}\s{1,64}(?:password|account)[ \t]+(?P<s>\S+)"),
     False),
    ("pgpass-password", re.compile(
        r"(?m)^[ \t]*[^\s:#]{1,256}:(?:\d{1,5}|\*):[^\s:]{1,256}:[^\s:]{1,256}:(?P<s>\S[^\n\r]{0,1024})$"), False),
    ("command-line-secret", re.compile(
        r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb)\b[^\n]{0,300}?[ \t]-p(?P<s>[^\s-]\S*)"),
     False),
    ("command-line-secret", re.compile(r"(?<![\w-])sshpass[ \t]{1,16}-p[ \t]{0,16}(?P<s>\S+)"), False),
    ("command-line-secret", re.compile(
        r"(?<![\w-])docker[ \t]{1,16}login\b[^\n]{0,300}?[ \t]-p[ \t]{1,16}(?P<s>[^\s-]\S*)"), False),
    ("command-line-secret", re.compile(
        r"(?<![\w-])(?:wandb|huggingface-cli|hf)[ \t]{1,16}(?:auth[ \t]{1,16})?login[ \t]{1,16}"
        r"(?:--relogin[ \t]{1,16})?(?P<s>[A-Za-z0-9_\-]{20,})"), False),
    ("command-line-secret", re.compile(
        r"(?<![\w-])(?:-u|-U|--user|--proxy-user|--http-user|--auth)(?:=|[ \t]{1,16})[\"']?"
        r"[^\s:\"'$]{0,256}:(?P<s>[^\s\"']+)"), False),
    ("command-line-secret", re.compile(
        r"(?<![\w-])--?(?P<name>[a-z][a-z0-9_\-]{0,60})(?=(?:=|[ \t]{1,16})(?!-)" + _QVALUE + ")"), True),
    ("secret-variable", re.compile(
        r"(?i)\bSetEnvironmentVariable\([ \t]{0,16}[\"'](?P<name>" + _NAME + r")[\"'][ \t]{0,16},[ \t]{0,16}"
        r"(?:\"(?P<s>[^\"\n]{1,4096})\"|'(?P<s2>[^'\n]{1,4096})')"), True),
    ("secret-variable", re.compile(r"(?i)\bset[ \t]{1,16}\"(?P<name>" + _NAME + r")=(?P<s>[^\"\n]{1,4096})\""), True),
    ("secret-variable", re.compile(
        r"(?im)(?:\bsetx|^[ \t]*(?:ENV|ARG))[ \t]{1,16}(?P<name>" + _NAME + r")(?=[ \t]{1,16}" + _QVALUE + ")"), True),
    ("secret-variable", re.compile(
        r"(?<![A-Za-z0-9_.\-])(?P<name>" + _NAME + r")(?=[\"']?[ \t]{0,16}(?::=|=|:(?!//))[ \t]{0,16}" + _QVALUE
        + ")"), True),
]

# literals one of which a text must contain for the rule to run at all (cheap `in` tests skip most rules)
_NEEDLES: list[tuple[str, ...]] = [
    ("://",), ("://",), ("uthoriz", "UTHORIZ"), ("ookie", "OOKIE"), ("earer", "EARER"), ("password", "account"),
    (":",), ("mysql", "mariadb"), ("sshpass",), ("login",), ("login",), ("-u", "-U", "--auth"), ("-",),
    ("etEnvironmentVariable", "etenvironmentvariable", "ETENVIRONMENTVARIABLE"), ('"',),
    ("etx", "ETX", "ENV", "ARG", "env", "arg", "Env", "Arg"), ("=", ":"),
]
assert len(_NEEDLES) == len(_RULES)

_HOME_RE = re.compile(r"(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)(?P<u>[A-Za-z0-9._\-]{1,64})")
_NOT_USERS = {"<user>", "root", "shared", "public", "default", "all users", "runner"}


# NAME: word word... : an unquoted value of letters only, followed by more words on its line
_PROSE_AFTER_COLON = re.compile(r"[ \t]{0,16}:[ \t]{1,16}[A-Za-z]{1,40}[ \t]+[A-Za-z]")
_PATH_RE = re.compile(r"(?:~|\.{1,2})?/[\w.\-/+@]*[`'\"\.,;:)]*$")


def _value_span(m: re.Match[str]) -> tuple[int, int] | None:
    for g in ("s", "s2", "s3"):
        try:
            if m.group(g) is not None:
                return m.span(g)
        except IndexError:
            continue
    return None


def _block_spans(text: str) -> list[tuple[int, int, str]]:
    """The secrets that run over many lines: key blocks (to their END line, else to the end of the text) and
    PuTTY private lines."""
    spans: list[tuple[int, int, str]] = []
    if "PRIVATE KEY" in text:
        pos = 0
        while True:
            b = _KEY_BEGIN_RE.search(text, pos)
            if b is None:
                break
            e = _KEY_END_RE.search(text, b.end())
            end = e.end() if e is not None else len(text)
            spans.append((b.start(), end, "private-key"))
            pos = end
    if "Private-Lines:" in text:
        spans.extend((m.start("s"), m.end("s"), "private-key") for m in _PUTTY_RE.finditer(text))
        spans.sort()
    return spans


CHUNK = 1 << 20  # long texts are redacted a chunk at a time (bounded span lists; see _chunks)
_NETRC_WORDS = ("machine", "login", "default")


def _chunks(text: str, blocks: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Cut *text* into pieces of about CHUNK characters at line ends that no secret can straddle: never inside
    a key block, never within 2 KiB after a .netrc keyword (its password may be lines further down).  Every
    other rule of the grammar stays within one line."""
    import bisect

    cuts: list[tuple[int, int]] = []
    pos = 0
    n = len(text)
    starts = [a for a, _, _ in blocks]
    ends = [b for _, b, _ in blocks]

    def covering(cut: int) -> int | None:
        """The end of the block (or of overlapping blocks) that *cut* falls inside, else None."""
        i = bisect.bisect_left(starts, cut) - 1
        end = max(ends[max(0, i - 63): i + 1], default=-1) if i >= 0 else -1
        return end if end > cut else None

    while pos < n:
        want = pos + CHUNK
        if want >= n:
            cuts.append((pos, n))
            break
        c = text.find("\n", want)
        tries = 0
        while c != -1:
            cut = c + 1
            blk = covering(cut)
            if blk is not None:  # never inside a key block: jump past its end
                c = text.find("\n", blk - 1)
                continue
            if tries < 64 and any(w in text[max(pos, cut - 2048):cut] for w in _NETRC_WORDS):
                tries += 1
                c = text.find("\n", cut)
                continue
            break
        cut = n if c == -1 else c + 1
        cuts.append((pos, cut))
        pos = cut
    return cuts


def find_secrets(text: str, blocks: list[tuple[int, int, str]] | None = None) -> list[tuple[int, int, str]]:
    """The secret spans in *text*: (start, end, kind), sorted, overlaps merged.  *blocks*: the multi-line
    spans when the caller has found them already (for a chunk of a longer text)."""
    spans: list[tuple[int, int, str]] = list(_block_spans(text) if blocks is None else blocks)
    for m in _TOKEN_RE.finditer(text):
        spans.append((m.start(), m.end(), _TOKEN_KINDS[m.lastgroup or ""]))
    for (kind, rx, check_name), needles in zip(_RULES, _NEEDLES):
        if not any(n in text for n in needles):
            continue
        for m in rx.finditer(text):
            if check_name and not is_secret_name(m.group("name")):
                continue
            sp = _value_span(m)
            if sp is None:
                continue
            a, b = sp
            while b > a and text[b - 1] in " \t\r":
                b -= 1
            if check_name and _PATH_RE.match(text, a, b):  # --ssl-key /etc/x.pem: the key's file, not the key
                continue
            if "s3" in rx.groupindex and m.group("s3") is not None and _PROSE_AFTER_COLON.match(text, m.end("name")):
                continue  # "apt-key: command not found", "token: check your settings": prose, not a value
            if b > a:
                spans.append((a, b, kind))
    if not spans:
        return []
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged = [spans[0]]
    for a, b, k in spans[1:]:
        pa, pb, pk = merged[-1]
        if a < pb:
            if b > pb:
                merged[-1] = (pa, b, pk)
        else:
            merged.append((a, b, k))
    return merged


@dataclass
class Replacement:
    placeholder: str
    kind: str
    where: list[str] = field(default_factory=list)
    length: int = 0


def _max_placeholder(text: str) -> int:
    if "<SECRET-" not in text:
        return 0
    return max((int(m.group(1)) for m in PLACEHOLDER_RE.finditer(text)), default=0)


class Redactor:
    """Keeps the secret -> placeholder map for one report, so the same secret gets the same placeholder."""

    def __init__(self, mask_identity: bool = False, hosts: list[str] | None = None,
                 users: list[str] | None = None) -> None:
        self.mask_identity = mask_identity
        self._map: dict[str, Replacement] = {}
        self._used = 0  # highest placeholder number in use (in the input or given out here)
        self._where = ""
        self.hosts: list[str] = []
        self.users: list[str] = []
        for h in hosts or []:
            self.add_host(h)
        for u in users or []:
            self.add_user(u)
        self.identity_hits: dict[str, int] = {"<HOST>": 0, "<USER>": 0}

    def reserve(self, text: str) -> None:
        """Placeholders already in *text* are taken: new secrets are numbered after them."""
        self._used = max(self._used, _max_placeholder(text))

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
            self._used += 1
            rep = Replacement(f"<SECRET-{self._used}>", kind, [], len(secret))
            self._map[secret] = rep
        if self._where and self._where not in rep.where:
            rep.where.append(self._where)
        return rep.placeholder

    def _replace(self, value: str, kind: str) -> str:
        """*value* with its secret parts replaced (placeholders inside it stay as they are)."""
        if "<SECRET-" in value:
            parts: list[str] = []
            last = 0
            for m in PLACEHOLDER_RE.finditer(value):
                parts.append(self._replace_plain(value[last:m.start()], kind))
                parts.append(m.group(0))
                last = m.end()
            parts.append(self._replace_plain(value[last:], kind))
            return "".join(parts)
        return self._replace_plain(value, kind)

    def _replace_plain(self, value: str, kind: str) -> str:
        if not any(c.isalnum() for c in value) or _looks_like_non_secret(value):
            return value
        return self.placeholder(value, kind)

    def text(self, text: str, where: str = "") -> str:
        if not isinstance(text, str) or not text:
            return text
        self._where = where
        self.reserve(text)
        if len(text) <= CHUNK:
            text = self._apply(text, find_secrets(text))
        else:  # piecewise: the span list and the pieces of one chunk at a time (peak memory ~2x the text)
            blocks = _block_spans(text)
            parts = []
            changed = False
            for a, b in _chunks(text, blocks):
                piece = text[a:b]
                mine = [(max(x, a) - a, min(y, b) - a, k) for x, y, k in blocks if x < b and y > a]
                done = self._apply(piece, find_secrets(piece, mine))
                changed = changed or done is not piece
                parts.append(done)
            if changed:
                text = "".join(parts)
            del parts
        if self.mask_identity:
            text = self._identity(text)
        return text

    def _apply(self, text: str, spans: list[tuple[int, int, str]]) -> str:
        if not spans:
            return text
        out: list[str] = []
        last = 0
        for a, b, kind in spans:
            out.append(text[last:a])
            out.append(self._replace(text[a:b], kind))
            last = b
        out.append(text[last:])
        return "".join(out)

    def env_value(self, name: str, value: str, where: str = "") -> str:
        """The value of an environment variable / fact called *name*: all of it is secret if the name says so."""
        if isinstance(value, str) and is_secret_name(name) and value.strip().lower() not in _TRIVIAL_VALUES \
                and "<SECRET-" not in value and not _looks_like_non_secret(value):
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
    v = value.strip().strip("\"'`")
    if v.lower() in _TRIVIAL_VALUES:
        return True
    if PLACEHOLDER_RE.fullmatch(v) or v in {"<HOST>", "<USER>", "<REDACTED>"} or set(v) <= {"*", "x", "X", "."}:
        return True
    # placeholders of documentation, not secrets: <your token>, <that file>, hf_..., sk-…
    if v.startswith("<") or (v.endswith(("...", "…")) and len(v.rstrip(".…")) <= 12):
        return True
    # references to another variable are not the secret itself: $HF_TOKEN, ${HF_TOKEN}, %HF_TOKEN%, $(cat f)
    if v.startswith("$") and re.fullmatch(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*|\([^()]*\))",
                                          v.rstrip(",;")):
        return True
    return v.startswith("%") and v.endswith("%") and re.fullmatch(r"%[A-Za-z_][A-Za-z0-9_]*%", v) is not None


def redact_text(text: str, mask_identity: bool = False, *, redactor: Redactor | None = None) -> str:
    """Return *text* with secrets (and optionally host/user identity) replaced by placeholders."""
    r = redactor or Redactor(mask_identity=mask_identity)
    if mask_identity and redactor is None:
        r.collect_identity(text)
    return r.text(text)


def _strings(obj: Any) -> Iterator[str]:
    """Every string in *obj* (keys included), without recursion (depth cannot overflow the stack)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            yield o
        elif isinstance(o, dict):
            for k, v in o.items():
                if isinstance(k, str):
                    yield k
                stack.append(v)
        elif isinstance(o, (list, tuple)):
            stack.extend(o)


def _walk(obj: Any, r: Redactor, path: str, parent_key: str | None = None) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            p = f"{path}.{k}" if path else str(k)
            nk = r.text(k, p) if isinstance(k, str) else k
            if isinstance(v, str) and isinstance(k, str) and (k.startswith("env.") or parent_key == "env"):
                out[nk] = r.env_value(k, v, p)
            else:
                out[nk] = _walk(v, r, p, k if isinstance(k, str) else None)
        return out
    if isinstance(obj, list):
        return [_walk(v, r, f"{path}[{i}]", parent_key) for i, v in enumerate(obj)]
    if isinstance(obj, str):
        return r.text(obj, path)
    return obj


def _identity_seed(report: dict[str, Any], r: Redactor) -> None:
    r.add_host(report.get("host"))
    facts = report.get("facts") if isinstance(report.get("facts"), dict) else {}
    for key in ("host.name", "host.hostname"):
        r.add_host(facts.get(key))
    for key in ("user", "username"):
        r.add_user(report.get(key))
    for key in ("user.name", "env.USER", "env.LOGNAME"):
        r.add_user(facts.get(key))
    for s in _strings(report):
        r.collect_identity(s)


def preview_report(report: dict[str, Any], mask_identity: bool = False) -> dict[str, Any]:
    """What will be shared: {"report": redacted copy, "replacements": [...], "identity": {...}}.

    ``replacements`` lists each placeholder with the kind of secret and where it was found (never the
    secret); ``identity`` says how many host and user occurrences were masked.
    """
    r = Redactor(mask_identity=mask_identity)
    for s in _strings(report):
        r.reserve(s)
    if mask_identity:
        _identity_seed(report, r)
    red = _walk(copy.deepcopy(report), r, "")
    return {"report": red, "replacements": r.replacements(),
            "identity": dict(r.identity_hits) if mask_identity else {}}


def redact_report(report: dict[str, Any], mask_identity: bool = False) -> dict[str, Any]:
    """Return a redacted deep copy of *report* (the input is not modified)."""
    return preview_report(report, mask_identity)["report"]
