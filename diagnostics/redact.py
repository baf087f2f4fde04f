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
   ``ATATT``; age ``AGE-SECRET-KEY-1``; Telegram bot tokens; Discord bot tokens; JSON Web Tokens (RFC 7519,
   signed, unsigned ``alg: none`` and five-part JWE); a PEM private key base64-encoded once more (kubeconfig
   ``client-key-data``, ``LS0tLS1CRUdJTi...``).  Tokens have no upper length: a 5000-character token is removed
   whole.
2. Key blocks: ``-----BEGIN ... PRIVATE KEY-----`` (PKCS#1/#8, EC, DSA, OpenSSH, ENCRYPTED) and ``-----BEGIN
   PGP PRIVATE KEY BLOCK-----``, up to their END line or, when the END line is missing (a truncated paste),
   to the end of the text; RFC 4716 ``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`` blocks; PuTTY
   ``PuTTY-User-Key-File`` private lines; YAML block scalars under a secret name (``password: |`` and the
   more-indented lines below it).
3. URL credentials ``scheme://user:password@host`` (RFC 3986 3.2.1): the password may hold ``@``, ``/`` or
   ``%40``; the user may be empty (``redis://:pw@host``).  The user name is identity (masked on request), except
   a token-like user without a password (``https://<token>@github.com``, Sentry DSNs), which is the secret.
   Tokens in URL paths: conda ``/t/<token>/``, Telegram ``/bot<token>/``.
4. Command-line flags: ``--token X``, ``--hf_token X``, ``--api-key=X``, ``--password X``, ``-token X`` (any
   flag whose name is a secret name), ``mysql -pPW``, ``sshpass -p PW``, ``curl -u user:pw``/``--user``,
   ``docker/podman/az/oc ... login -p PW``, ``wandb/hf/vault login X``, ``echo X | ... login``/``--password-stdin``,
   ``redis-cli -a``, ``ldapsearch -w``, ``smbclient -U user%PW``, ``curl -b 'name=value'``, ``aws configure set
   NAME X``/``npm config set NAME X``, GitHub Actions ``::add-mask::X``.
5. Assignments: ``NAME=value``, ``NAME: value``, ``"name": "value"``, ``name = value`` (INI/TOML/YAML/JSON),
   ``export``/``set``/``setx``/``setenv``/fish ``set -gx``, PowerShell ``$env:NAME = "value"``, Dockerfile
   ``ENV NAME value``, ``os.environ["NAME"] = "v"``, ``setdefault/putenv/Setenv("NAME", "v")``, Kubernetes
   ``- name: NAME`` / ``value: v``, XML ``<name>v</name>`` and ``<add key="NAME" value="v"/>``, ``;Pwd=`` in
   connection strings, full-width ``＝``/``：`` and the ideographic space, where NAME is a secret name
   (``is_secret_name``; ``API_KEY_2``, ``HF_TOKEN2``, ``MYSQL_PWD``, ``PHPSESSID`` included); quoted values are
   taken whole (several words, ``,`` and ``;`` included), unquoted ones up to the next blank.  Words: ``the
   password is X`` (X with a digit and a letter), ``密码：X``, ``密码是 X``, ``api key 是 X``.
6. Headers: ``Authorization``/``Proxy-Authorization`` (any scheme), ``Cookie``/``Set-Cookie``, and headers
   whose name is a secret name (``X-Api-Key``, ``Private-Token``); ``Bearer <token>`` anywhere.
7. Files: ``.netrc`` (``machine h login u password p``), ``.pgpass`` lines (``host:port:db:user:password``).
8. Wrapped lines: a secret that ends a line of WRAP_MIN+ characters continues on the next line when that starts
   with token characters (a terminal or pager wrap); a token prefix (``hf_``, ``ghp_``, ``sk-``...) cut short at
   the end of such a line is joined with the next line's start and tested against the token shapes.

Identity masking (``mask_identity=True``): the host name (``<HOST>``), user names (``<USER>``) seen in
home paths (``/home/alice`` -> ``/home/<USER>``, ``/Users/alice``, ``C:\\Users\\alice``) or given in the
report, everywhere they occur as a word.

Cost: every rule is a Python ``re`` whose work per starting position is bounded by a constant (bounded
``{m,n}`` gaps, no two adjacent unbounded quantifiers over the same characters, rules anchored on a
literal or a word start), so the whole scan is linear in the text.  A text longer than PREFILTER_MIN is first
scanned once by an RE2 *trigger* (a superset of the grammar, linear by construction, ~100 MB/s): only the lines
where some rule could match go through the Python rules, so an ordinary 64 MB log is redacted in about a
second; text with a secret on every line costs what the whole scan costs.  tests/test_redact.py checks that
the prefilter and the whole scan agree (on every catalogue format and on generated texts) and measures the
time; bench/bench_text.py gives the figures.
"""
from __future__ import annotations

import copy
import re

import re2
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
    "COOKIE", "AUTH", "SIG", "SIGNATURE", "APITOKEN", "ACCESSTOKEN", "REFRESHTOKEN", "SESSIONTOKEN",
    "PWD", "SESSIONID", "SESSID",  # MYSQL_PWD (PWD alone is the working directory), sessionid, PHPSESSID
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
    while len(parts) > 1 and parts[-1].isdigit():  # API_KEY_2
        parts.pop()
    if not parts:
        return False
    parts[-1] = parts[-1].rstrip("0123456789") or parts[-1]  # HF_TOKEN2
    n = n.rstrip("0123456789_.-") or n
    if parts[-1] in _SECRET_SUFFIXES:
        return True
    if len(parts) >= 2 and parts[-1] == "DATA" and parts[-2] in ("KEY", "TOKEN", "SECRET", "PASSWORD"):
        return True  # kubeconfig client-key-data, token-data: the (base64) secret itself
    # camelCase / glued forms: apiKey, authToken, HFTOKEN
    return n.endswith(("APIKEY", "TOKEN", "SECRETKEY", "ACCESSKEY", "ACCOUNTKEY", "SESSIONID", "SESSID")) and len(n) > 5


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
    # JWS (signed or "alg: none" with an empty signature) and JWE (five parts)
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+)?"),
    ("discord-bot-token", r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"),
    # a PEM private key, base64-encoded once more (kubeconfig client-key-data, Kubernetes tls.key, CI variables)
    ("private-key", r"LS0tLS1CRUdJTiB(?:QUklWQVRFIEtF|SU0EgUFJJVkFURSBL|FQyBQUklWQVRFIEtF|EU0EgUFJJVkFURSBL"
                    r"|PUEVOU1NIIFBSSVZBVEUgS0VZ|FTkNSWVBURUQgUFJJVkFURSBL|QR1AgUFJJVkFURSBL)[A-Za-z0-9+/=]*"),
    ("webhook-url", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}"
                    r"|https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}"),
]
# the first characters of every prefix: a cheap look-ahead that spares the alternation at most positions
# (20x faster on text without tokens; tests/test_redact.py checks that every prefix starts with one of them)
TOKEN_FIRST_CHARS = "ADGHLMNOPSadeghklnprstwxy0-9"
_TOKEN_RE = re.compile(rf"(?<![A-Za-z0-9])(?=[{TOKEN_FIRST_CHARS}])(?:"
                       + "|".join(f"(?P<t{i}>{body})" for i, (_, body) in enumerate(_PREFIXES)) + ")")
_TOKEN_KINDS = {f"t{i}": kind for i, (kind, _) in enumerate(_PREFIXES)}

# 2. key blocks (the END line is searched for separately: a truncated block runs to the end of the text); the
#    dashes of RFC 4716 (SSH2) blocks are four with a blank
_KEY_BEGIN_RE = re.compile(r"-{4,5} ?BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_KEY_END_RE = re.compile(r"-{4,5} ?END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PUTTY_RE = re.compile(r"Private-Lines:[ \t]*\d{1,6}\r?\n(?P<s>(?:[A-Za-z0-9+/=]{1,128}\r?\n?){1,4096})")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20  # room for the DFA of the trigger (RE2's default 8 MiB is tight for ~40 literals)
_RE2_OPTIONS.log_errors = False  # never a line on the user's stderr from inside RE2 (a DFA budget message)
# YAML block scalars under a secret name (`password: |` and the more-indented lines below it)
_YAML_BLOCK_HEAD = re2.compile(r"(?m):[ \t]*[|>][-+0-9]{0,2}[ \t]*(?:#[^\n]*)?\r?$", _RE2_OPTIONS)
_YAML_BLOCK_NAME = re.compile(r"(?P<ind>[ \t]*)(?:-[ \t]+)?[\"']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,100})[\"']?[ \t]*$")
YAML_BLOCK_MAX_LINES = 4096

# a secret name, as the head of an assignment / flag (the value sits in a look-ahead, so a name that turns
# out not to be secret consumes nothing after it: `$env:HF_TOKEN=...` still reaches HF_TOKEN)
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,100}"
_QVALUE = (r"(?:\"(?P<s>(?:[^\"\\\n]|\\.){1,4096})\""
           r"|'(?P<s2>[^'\n]{1,4096})'"
           r"|[\"']?(?P<s3>[^\s\"'][^\s]*))")

_SP = "[ \\t\u3000]"  # a blank, the ideographic (full-width) space included


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _basic_credential(value: str) -> bool:
    """A bare ``Basic <base64>``: a secret when the base64 decodes to ``user:password``."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in raw and all(32 <= c < 127 for c in raw)


def _prose_value(m: re.Match[str], value: str) -> bool:
    """``the password is X``: an unquoted X is a secret only when it has a digit and a letter (``is wrong``,
    ``was rejected`` are words)."""
    return m.group("s3") is None or _has_digit_and_letter(value)


# The grammar's rules, one row each: the kind of secret, whether the group "name" is checked with is_secret_name,
# a further test of the match and its value (or None), the pattern, and literals one of which a text must contain
# for the rule to run at all (cheap `in` tests skip most rules).
_RULES: list[tuple[str, bool, Any, re.Pattern[str], tuple[str, ...]]] = [
    (kind, check_name, value_ok, re.compile(pattern), needles)
    for kind, check_name, value_ok, pattern, needles in (
        ("url-password", False, None,
         r"(?i)(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@\"'<>]{0,128}):"
         r"(?P<s>[^\s\"'<>]{1,1024})@(?=[^\s@\"'<>]*(?:[\s\"'<>]|$))",
         ("://",)),
        ("url-password", False, None,
         r"(?i)(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@\"'<>]{0,128}):"
         r"(?P<s>[^\s\"'<>@]{1,1024})@",
         ("://",)),
        # a token as the whole user part: https://<token>@github.com, Sentry DSNs https://<key>@o1.ingest.sentry.io
        ("url-token", False, lambda m, v: _has_digit_and_letter(v),
         r"(?i)(?<![A-Za-z0-9+.\-])[a-z][a-z0-9+.\-]{1,20}://(?P<s>[A-Za-z0-9._~%\-]{16,256})@(?=[A-Za-z0-9\[])",
         ("://",)),
        ("authorization-header", False, None,
         r"(?i)(?<![\w-])(?:proxy-)?authorization[\"']?[ \t]{0,16}[:=][ \t]{0,16}[\"']?"
         r"(?:(?:bearer|basic|token|bot|digest|negotiate|ntlm|apikey|key|sso-key|aws4-hmac-sha256|hmac)[ \t]{1,16})?"
         r"(?P<s>[^\s\"'][^\n\"'\r]{0,8191})",
         ("uthoriz", "UTHORIZ")),
        ("cookie-header", False, None,
         r"(?i)(?<![\w-])(?:set-)?cookie2?[\"']?[ \t]{0,16}:[ \t]{0,16}[\"']?(?P<s>[^\s\"'][^\n\"'\r]{0,8191})",
         ("ookie", "OOKIE")),
        ("bearer-token", False, None,
         r"(?i)(?<![\w-])bearer[ \t]{1,16}(?P<s>[A-Za-z0-9._~+/\-]{12,}=*)",
         ("earer", "EARER")),
        ("basic-credentials", False, lambda m, v: _basic_credential(v),
         r"(?i)(?<![\w-])basic[ \t]{1,16}(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
         ("asic", "ASIC")),
        ("netrc-password", False, None,
         r"(?<![\w-])(?:machine[ \t]+\S{1,256}|default|login[ \t]+\S{1,256})"
         r"(?:\s{1,64}(?:login|account|port|macdef)[ \t]+\S{1,256}){0,4}\s{1,64}(?:password|account)[ \t]+(?P<s>\S+)",
         ("password", "account")),
        ("pgpass-password", False, None,
         r"(?m)^[ \t]*[^\s:#]{1,256}:(?:\d{1,5}|\*):[^\s:]{1,256}:[^\s:]{1,256}:(?P<s>\S[^\n\r]{0,1024})$",
         (":",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb)\b[^\n]{0,300}?[ \t]-p(?P<s>[^\s-]\S*)",
         ("mysql", "mariadb")),
        ("command-line-secret", False, None,
         r"(?<![\w-])sshpass[ \t]{1,16}-p[ \t]{0,16}(?P<s>\S+)",
         ("sshpass",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])(?:docker|podman|nerdctl|buildah|skopeo|crane|oras|helm[ \t]{1,16}registry|az|oc)[ \t]{1,16}"
         r"(?:auth[ \t]{1,16})?login\b[^\n]{0,300}?[ \t]-p[ \t]{0,16}(?P<s>[^\s-]\S*)",
         ("login",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])(?:wandb|huggingface-cli|hf|vault)[ \t]{1,16}(?:auth[ \t]{1,16})?login[ \t]{1,16}"
         r"(?:--relogin[ \t]{1,16})?(?P<s>[A-Za-z0-9_.\-]{20,})",
         ("login",)),
        # redis-cli -a PW, ldapsearch -w PW, smbclient -U user%PW, curl -b 'name=value'
        ("command-line-secret", False, None,
         r"(?<![\w-])redis-cli\b[^\n]{0,300}?[ \t]-a[ \t]{1,16}(?P<s>[^\s-]\S*)",
         ("redis-cli",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)\b[^\n]{0,300}?[ \t]-w[ \t]{1,16}"
         r"(?P<s>[^\s-]\S*)",
         ("ldap",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])(?:smbclient|rpcclient|smbmap|smbcacls|net)\b[^\n]{0,300}?[ \t](?:-U|--user)[ \t=]{1,16}[\"']?"
         r"[^\s%\"']{1,256}%(?P<s>[^\s\"']+)",
         ("%",)),
        ("cookie-header", False, None,
         r"(?<![\w-])curl\b[^\n]{0,300}?[ \t]-b[ \t]{1,16}(?:\"(?P<s>[^\"\n]*=[^\"\n]*)\"|'(?P<s2>[^'\n]*=[^'\n]*)'"
         r"|(?P<s3>[^\s\"']*=\S*))",
         ("curl",)),
        # a value a CI job asked to be masked is a secret by definition (GitHub Actions)
        ("masked-value", False, None,
         r"::add-mask::(?P<s>[^\s][^\n\r]{0,4095})",
         ("::add-mask::",)),
        # tokens in URL paths: conda channels (/t/<token>/), Telegram bots (/bot<token>/)
        ("url-token", False, None,
         r"(?:anaconda\.org/t/|api\.telegram\.org/(?:file/)?bot)(?P<s>[A-Za-z0-9_:\-]{8,})",
         ("anaconda.org/t/", "api.telegram.org/")),
        # echo <secret> | docker login --password-stdin, | gh auth login --with-token, | chpasswd, | sudo -S
        ("command-line-secret", False, None,
         r"(?<![\w-])echo[ \t]{1,16}(?:-[ne]{1,2}[ \t]{1,16})?"
         r"(?:\"(?P<s>[^\"\n]{1,4096})\"|'(?P<s2>[^'\n]{1,4096})'|(?P<s3>[^\s|'\"$][^\s|]{0,4095}))"
         r"[ \t]{0,16}\|[^\n]{0,300}?(?:login|password-stdin|with-token|chpasswd|passwd|sudo[ \t]{1,16}(?:-[A-Za-z]{0,8}S|--stdin))",
         ("echo",)),
        ("command-line-secret", False, None,
         r"(?<![\w-])(?:-u|-U|--user|--proxy-user|--http-user|--auth)(?:=|[ \t]{1,16})[\"']?"
         r"[^\s:\"'$]{0,256}:(?P<s>[^\s\"']+)",
         ("-u", "-U", "--auth")),
        ("command-line-secret", True, None,
         r"(?<![\w-])--?(?P<name>[a-z][a-z0-9_\-]{0,60})(?=(?:=|[ \t]{1,16})(?!-)" + _QVALUE + ")",
         ("-",)),
        # aws configure set aws_secret_access_key X, npm/yarn/pip config set <key> X
        ("command-line-secret", True, None,
         r"(?i)(?<![\w-])config(?:ure)?[ \t]{1,16}set[ \t]{1,16}(?:--?[\w\-]{1,30}[ \t]{1,16}){0,3}"
         r"(?P<name>[^\s=\"']{1,200})(?=[ \t]{1,16}(?!-)" + _QVALUE + ")",
         ("onfig", "ONFIG")),
        ("secret-variable", True, None,
         r"(?i)\b(?:SetEnvironmentVariable|setdefault|putenv|setenv|set_env)\([ \t]{0,16}[\"'](?P<name>" + _NAME
         + r")[\"'][ \t]{0,16},[ \t]{0,16}"
         r"(?:\"(?P<s>[^\"\n]{1,4096})\"|'(?P<s2>[^'\n]{1,4096})')",
         ("(",)),
        ("secret-variable", True, None,
         r"(?i)\bset[ \t]{1,16}\"(?P<name>" + _NAME + r")=(?P<s>[^\"\n]{1,4096})\"",
         ('"',)),
        ("secret-variable", True, None,
         r"(?im)(?:\bsetx|\bsetenv|\bset[ \t]{1,16}-[a-z]{1,4}|^[ \t]*(?:ENV|ARG))[ \t]{1,16}(?P<name>" + _NAME
         + r")(?=[ \t]{1,16}" + _QVALUE + ")",
         ("etx", "ETX", "ENV", "ARG", "env", "arg", "Env", "Arg", "set ", "SET ", "Set ")),
        # connection strings: ...;Uid=sa;Pwd=X; (PWD alone is the shell's working directory)
        ("secret-variable", False, None,
         r"(?i)(?<=;)[ \t]{0,16}pwd[ \t]{0,16}=[ \t]{0,16}(?P<s>[^;\s\"'}]{1,4096})",
         (";",)),
        # Kubernetes env lists: "- name: HF_TOKEN" and "value: X" on the next line
        ("secret-variable", True, None,
         r"(?m)\bname:[ \t]{0,16}[\"']?(?P<name>" + _NAME + r")[\"']?[ \t]{0,16}\r?\n[ \t]{0,64}(?:-[ \t]{1,16})?"
         r"value:[ \t]{0,16}" + _QVALUE,
         ("value:",)),
        # XML: <password>X</password>, .NET <add key="ApiKey" value="X"/>
        ("secret-variable", True, None,
         r"<(?P<name>[A-Za-z_][\w.\-]{0,60})>[ \t]{0,16}(?P<s>[^<\s][^<\n]{0,4095})</(?P=name)>",
         ("</",)),
        ("secret-variable", True, None,
         r"(?i)\bkey=[\"'](?P<name>" + _NAME + r")[\"'][ \t]{1,16}value="
         r"(?:\"(?P<s>[^\"\n]{1,4096})\"|'(?P<s2>[^'\n]{1,4096})')",
         ("alue=", "ALUE=")),
        ("secret-variable", True, None,
         r"(?<![A-Za-z0-9_.\-])(?P<name>" + _NAME + r")(?=[\"']?\]?" + _SP + r"{0,16}(?::=|=|:(?!//)|＝|：)" + _SP
         + r"{0,16}" + _QVALUE + ")",
         ("=", ":", "＝", "：")),
        # words: "the password is X", "token was X"
        ("secret-variable", False, _prose_value,
         r"(?i)(?<![\w-])(?:password|passwd|passphrase|passcode|api[ _\-]?key|access[ _\-]?key|token|secret)"
         r"[ \t]{1,16}(?:is|was)[ \t]{1,16}"
         r"(?:\"(?P<s>[^\"\n]{1,4096})\"|'(?P<s2>[^'\n]{1,4096})'|(?P<s3>[^\s\"',;]{6,4096}))",
         (" is", " was", " IS", " WAS", " Is", " Was")),
        # Chinese: 密码：X, 密码是 X, 令牌＝X (the value is the ASCII that follows)
        ("secret-variable", False, None,
         r"(?:(?:密码|口令|令牌|密钥|秘钥|私钥|授权码|访问码)" + _SP + r"{0,16}(?:(?:是|为)" + _SP + r"{0,16}[:：=＝]?|[:：=＝])"
         r"|(?i:api[ _\-]?key|access[ _\-]?key|token|password|passwd|secret)" + _SP + r"{0,16}(?:(?:是|为)" + _SP
         + r"{0,16}[:：=＝]?|[：＝]))" + _SP + r"{0,16}(?P<s>[!-~]{4,4096})",
         ("密码", "口令", "令牌", "密钥", "秘钥", "私钥", "授权码", "访问码", "是", "为", "：", "＝")),
    )
]

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
    if "|" in text or ">" in text:
        spans.extend(_yaml_block_spans(text))
    spans.sort()
    return spans


def _yaml_block_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """``password: |`` (or ``>``, ``|-``...) under a secret name: the lines below it that are indented deeper
    than the name are the secret (up to YAML_BLOCK_MAX_LINES lines)."""
    for h in _YAML_BLOCK_HEAD.finditer(text):
        ls = text.rfind("\n", 0, h.start()) + 1
        m = _YAML_BLOCK_NAME.fullmatch(text, ls, h.start())
        if m is None or not is_secret_name(m.group("name")):
            continue
        ind = len(m.group("ind").expandtabs())
        pos = text.find("\n", h.end())
        if pos < 0:
            continue
        start = end = pos + 1
        cur = start
        for _ in range(YAML_BLOCK_MAX_LINES):
            if cur >= len(text):
                break
            nl = text.find("\n", cur)
            stop = len(text) if nl < 0 else nl
            line = text[cur:stop]
            if line.strip():
                lead = len(line) - len(line.lstrip(" \t"))
                if lead <= ind:
                    break
                if end == start:  # the secret starts after the first line's indentation
                    start = end = cur + lead
                end = stop
            cur = stop + 1
        if end > start:
            yield (start, end, "secret-variable")


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
            if tries < 64:
                last = text[text.rfind("\n", pos, c) + 1:c]  # the line before the cut
                # a .netrc password may be lines below its machine word, a Kubernetes value below its name, and a
                # long line may be wrapped inside a secret: cut after a short, plain line instead
                if len(last) >= WRAP_MIN or "name:" in last or any(
                        w in text[max(pos, cut - 2048):cut] for w in _NETRC_WORDS):
                    tries += 1
                    c = text.find("\n", cut)
                    continue
            break
        cut = n if c == -1 else c + 1
        cuts.append((pos, cut))
        pos = cut
    return cuts


def _scan(text: str, base: int, spans: list[tuple[int, int, str]]) -> None:
    """Append the single-line secrets of *text* (tokens and every rule of the grammar) to *spans*, shifted by
    *base* (the position of *text* in the text being redacted)."""
    for m in _TOKEN_RE.finditer(text):
        spans.append((base + m.start(), base + m.end(), _TOKEN_KINDS[m.lastgroup or ""]))
    for kind, check_name, value_ok, rx, needles in _RULES:
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
            if check_name and "s3" in rx.groupindex and m.group("s3") is not None \
                    and _PROSE_AFTER_COLON.match(text, m.end("name")):
                continue  # "apt-key: command not found", "token: check your settings": prose, not a value
            if value_ok is not None and not value_ok(m, text[a:b]):
                continue
            if b > a:
                spans.append((base + a, base + b, kind))


# ------------------------------------------------------------------------------------------- the prefilter
# A long text is not run through every rule: one RE2 scan (linear, ~60-100 MB/s) finds the lines where some rule
# COULD match, and only those lines (a window around each) go through the Python rules above.  The trigger is a
# superset of the grammar, part by part: every token body (look-aheads dropped), every literal a rule starts
# from, and for the rules over secret names every name that contains one of _NAME_PARTS (each secret suffix
# and infix holds one; tests/test_redact.py checks both, and that windowed and whole scans agree).
_NAME_PARTS = ("token", "key", "secret", "pass", "pw", "cred", "pat", "auth", "cookie", "sig", "sess")
_NP = "(?i:" + "|".join(_NAME_PARTS) + ")"
# where each token shape of _PREFIXES starts: literals and short classes only.  (The token bodies themselves, with
# their {30,} counts, would make RE2's DFA run out of memory on token-like text -- base64 blobs, long alphanumeric
# runs -- and fall back to a scan 20-50x slower; tests/test_redact.py times the prefilter on such text.)
_TOKEN_HEADS = (
    r"hf_|api_org_|gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent|wt)-|GR1348941|xox[abposre]-"
    r"|xapp-|sk-|[sr]k_(?:live|test)_|whsec_|A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|NVA|IPA|PKA)|AIza|ya29\.|GOCSPX-"
    r"|npm_|pypi-|nvapi-|dckr_pat_|hv[sb]\.|do[por]_v1_|shp(?:at|ss|ca|pa)_|SG\.|r8_|gsk_|pplx-|glsa_|glc_|lin_api_"
    r"|PMAK-|dp\.(?:pt|st|ct|sa|scim|audit)\.|pul-|tskey-|sbp_|dapi|ATATT3|HRKU-|key-|SK[0-9a-f]|AGE-SECRET-KEY-1"
    r"|:AA|eyJ|\.[A-Za-z0-9_\-]{6}\.|LS0tLS1CRUdJTiB|https://hooks\.slack\.com/|https://discord(?:app)?\.com/api/webhooks/"
)
_TRIGGER_PARTS = [
    "(?:" + _TOKEN_HEADS + ")",
    r"(?i:authoriz|cookie|bearer|basic[ \t]|login|echo[ \t]|mysql|mariadb|sshpass|setenvironmentvariable|setx"
    r"|setdefault|putenv|setenv|set_env|set[ \t]+-|config|value=|password-stdin|with-token|redis-cli|ldap|smbclient"
    r"|rpcclient|smbmap|smbcacls|net[ \t]|curl)|::add-mask::|anaconda\.org/t/|api\.telegram\.org/",
    r"(?P<fwd>(?m:name:[ \t]*[\"']?[A-Za-z0-9_.\-]*" + _NP + r"[A-Za-z0-9_.\-]*[\"']?[ \t]*\r?$))",
    r"://[^\s\"'<>]*@",
    r"(?P<back>(?:password|account)[ \t])",  # .netrc: its machine/login words may be lines above
    r"(?m:^[ \t]*[^\s:#]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:\S)",
    r"(?m:^[ \t]*(?:ENV|ARG)[ \t])",
    r"(?:-u|-U|--user|--proxy-user|--http-user|--auth)(?:=|[ \t])",
    _NP + r"[A-Za-z0-9_.\-]*[\"']?\]?[ \t\x{3000}]*(?:=|:|＝|：|>)",
    r"-[A-Za-z0-9_\-]*" + _NP + r"[A-Za-z0-9_\-]*[ \t]",
    r"(?i:passw|passphrase|passcode|api[ _\-]?key|access[ _\-]?key|token|secret)[ \t]+(?i:is|was)[ \t]",
    r"(?i:pwd)[ \t]*=",
    "密码|口令|令牌|密钥|秘钥|私钥|授权码|访问码",
    r"(?i:api[ _\-]?key|access[ _\-]?key|token|password|passwd|secret)[ \t\x{3000}]*(?:是|为)",
]
# two RE2 passes, literals apart from the name shapes: one automaton of all of them blows up (every "pw", "sig",
# "pat" inside a word starts a name) and scans random alphanumerics 6x slower than the two passes together
_TRIGGERS = [re2.compile("|".join(p for p in _TRIGGER_PARTS if _NP not in p), _RE2_OPTIONS),
             re2.compile("|".join(p for p in _TRIGGER_PARTS if _NP in p), _RE2_OPTIONS)]
_FLAGS = [(rx.groupindex.get("back", 0), rx.groupindex.get("fwd", 0)) for rx in _TRIGGERS]
DENSE = 512  # a trigger hit per this many characters or more: the windows would cover most of the text
PREFILTER_MIN = 8192  # shorter texts are scanned whole
NETRC_BACK = 2400     # how far above a .netrc password its machine/login words may be


def _windows(text: str) -> list[tuple[int, int]]:
    """The stretches of *text* (whole lines, sorted, not overlapping) that hold every place a rule could match.

    Linear: the trigger's matches come in order, a match inside the stretch already taken costs nothing, and each
    search for a line end starts where the last one stopped."""
    out: list[tuple[int, int]] = []
    n = len(text)
    budget = n // DENSE + 16  # past this many hits, the whole text is one window (the whole scan is cheaper)
    hits: list[tuple[int, int, bool, bool]] = []
    for rx, (bi, fi) in zip(_TRIGGERS, _FLAGS):
        for m in rx.finditer(text):
            budget -= 1
            if budget < 0:
                return [(0, n)]
            hits.append((m.start(), m.end(), bool(bi) and m.start(bi) >= 0, bool(fi) and m.start(fi) >= 0))
    hits.sort()
    cur_a, cur_b = -1, -1  # the stretch being built: [cur_a, cur_b), cur_b just after a newline (or n)
    fwd_done = -1          # the cur_b a "name:" line has already been extended past
    for s, mend, back, fwd in hits:
        if s < cur_b:  # on a line already taken (cur_a and cur_b are line starts)
            ls = max(cur_a, text.rfind("\n", cur_a, s) + 1)
            if fwd and fwd_done != cur_b and cur_b < n:
                e = text.find("\n", max(cur_b, mend))
                cur_b = fwd_done = n if e < 0 else e + 1
        else:
            ls = max(cur_b, 0, text.rfind("\n", max(cur_b, 0), s) + 1)
            e = text.find("\n", mend)
            if e >= 0 and fwd:  # a Kubernetes "name:" line: its value is on the next line
                e = text.find("\n", e + 1)
            b = n if e < 0 else e + 1
            if fwd:
                fwd_done = b
            if cur_b >= 0:
                out.append((cur_a, cur_b))
            cur_a, cur_b = ls, b
        if back and ls - NETRC_BACK < cur_a and cur_a > 0:  # .netrc: its machine/login words may be lines above
            cur_a = text.rfind("\n", 0, max(0, ls - NETRC_BACK)) + 1
        # adjacent or overlapping stretches (a netrc one may reach back over several) become one
        while out and cur_a <= out[-1][1]:
            pa, _ = out.pop()
            cur_a = min(pa, cur_a)
    if cur_b >= 0:
        out.append((cur_a, cur_b))
    return out


# ------------------------------------------------------------------------------------- lines cut by a wrap
WRAP_MIN = 64  # a line at least this long that ends inside a secret may have been wrapped (terminal, pager)
WRAP_MAX_LINES = 64
_WRAP_CONT = re.compile(r"[A-Za-z0-9+/=_\-.~%]{4,}")


def _extend_wrapped(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """A secret that ends a long line (WRAP_MIN+) and whose next line starts with more token characters was cut
    by a wrap: the continuation is part of it (a run with a digit, or the whole next line, or 16+ characters),
    over up to WRAP_MAX_LINES lines."""
    out = []
    n = len(text)
    for a, b, k in spans:
        if text[b - 1:b] == ">" and text.rfind("<SECRET-", a, b) >= 0:  # a placeholder: redacted already
            out.append((a, b, k))
            continue
        for _ in range(WRAP_MAX_LINES):
            nl = b + 1 if b < n and text[b] == "\n" else b + 2 if text.startswith("\r\n", b) else -1
            if nl < 0:
                break
            ls = text.rfind("\n", 0, b if text[b] == "\n" else b) + 1
            if b - ls < WRAP_MIN:
                break
            m = _WRAP_CONT.match(text, nl)
            if m is None:
                break
            run = m.group(0)
            whole = m.end() >= n or text[m.end()] in "\r\n"
            if not (whole or len(run) >= 16 or any(c.isdigit() for c in run)):
                break
            b = m.end()
            if not whole:
                break
        out.append((a, b, k))
    return out


# a token's first part at the end of a long line, too short for its own rule: joined with the next line's start
_WRAPPED_FRAGMENT = re2.compile(
    r"(?m)(?:^|[^A-Za-z0-9])((?:hf_|api_org_|gh[pousr]_|github_pat_|gl(?:pat|dt|rt)-|sk-|[sr]k_live_|xox[abposre]-"
    r"|xapp-|npm_|pypi-|nvapi-|dckr_pat_|AKIA|ASIA|AIza|ya29\.|eyJ)[A-Za-z0-9_.\-]*)\r?$", _RE2_OPTIONS)


def _wrapped_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    for m in _WRAPPED_FRAGMENT.finditer(text):
        a, b = m.span(1)
        if b - (text.rfind("\n", 0, a) + 1) < WRAP_MIN:
            continue
        nl = text.find("\n", b) + 1
        c = _WRAP_CONT.match(text, nl) if nl > 0 else None
        if c is None:
            continue
        joined = text[a:b] + c.group(0)
        t = _TOKEN_RE.match(joined)
        if t is not None and t.end() > b - a:
            yield (a, nl + t.end() - (b - a), _TOKEN_KINDS[t.lastgroup or ""])


def find_secrets(text: str, blocks: list[tuple[int, int, str]] | None = None, *,
                 prefilter: bool = True) -> list[tuple[int, int, str]]:
    """The secret spans in *text*: (start, end, kind), sorted, overlaps merged.  *blocks*: the multi-line
    spans when the caller has found them already (for a chunk of a longer text).  *prefilter* False scans the
    whole text with every rule (what the prefilter must agree with; tests compare the two)."""
    spans: list[tuple[int, int, str]] = list(_block_spans(text) if blocks is None else blocks)
    if not prefilter or len(text) <= PREFILTER_MIN:
        _scan(text, 0, spans)
    else:
        for a, b in _windows(text):
            _scan(text if (a, b) == (0, len(text)) else text[a:b], a, spans)
    if "\n" in text:
        spans.extend(_wrapped_tokens(text))
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
    if "\n" in text:
        merged = _extend_wrapped(text, merged)
        out = [merged[0]]
        for a, b, k in merged[1:]:  # a continuation may reach the next secret
            if a < out[-1][1]:
                out[-1] = (out[-1][0], max(b, out[-1][1]), out[-1][2])
            else:
                out.append((a, b, k))
        merged = out
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


def _splice(text: str, changes: list[tuple[int, int, str]]) -> str:
    """*text* with each ``(start, end, new)`` of *changes* (in order, not overlapping) in place of its span."""
    parts: list[str] = []
    pos = 0
    for a, b, new in changes:
        parts.append(text[pos:a])
        parts.append(new)
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


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
        else:  # piecewise: the span list and the pieces of one chunk at a time
            blocks = _block_spans(text)
            # only the pieces that changed are kept (with their place): a text without a secret costs one piece,
            # not a second copy of itself, and is returned as it is
            changes: list[tuple[int, int, str]] = []
            for a, b in _chunks(text, blocks):
                piece = text[a:b]
                mine = [(max(x, a) - a, min(y, b) - a, k) for x, y, k in blocks if x < b and y > a]
                done = self._apply(piece, find_secrets(piece, mine))
                if done is not piece:
                    changes.append((a, b, done))
                del piece, done
            if changes:
                text = _splice(text, changes)
                del changes
        if self.mask_identity:
            text = self._identity(text)
        return text

    def _apply(self, text: str, spans: list[tuple[int, int, str]]) -> str:
        """*text* with each span replaced; *text* itself (not a copy) when no span changes, as when a text already
        redacted (every span a placeholder already) is redacted again for an export or a share preview."""
        changes: list[tuple[int, int, str]] = []
        for a, b, kind in spans:
            old = text[a:b]
            new = self._replace(old, kind)
            if new != old:
                changes.append((a, b, new))
        if not changes:
            return text
        return _splice(text, changes)

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
            # the place is named by the redacted key: a secret used as a key must not reach "where"
            nk = r.text(k, f"{path}.<key>" if path else "<key>") if isinstance(k, str) else k
            p = f"{path}.{nk}" if path else str(nk)
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
