"""Redaction: every planted secret disappears, placeholders are consistent, harmless text is left alone."""
from __future__ import annotations

import json
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from diagnostics.redact import is_secret_name, preview_report, redact_report, redact_text
from tests.test_store_common import GH_SECRET, HF_SECRET, PW_SECRET, sample_report

# (text with a secret, the secret) -- token shapes as the vendors document them
CASES = [
    (f"export HF_TOKEN={HF_SECRET}", HF_SECRET),
    (f"login with {HF_SECRET} please", HF_SECRET),
    ("AWS key AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    (f"token {GH_SECRET}", GH_SECRET),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd"),
    ("OPENAI_API_KEY is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    ("slack xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ('curl -H "Authorization: Bearer abcDEF123456.ghiJKL-789" https://api', "abcDEF123456.ghiJKL-789"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    (f"postgresql://alice:{PW_SECRET}@db.example.org/runs", PW_SECRET),
    ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    ("DB_PASSWORD='correct horse'", "correct"),
    ('{"api_key": "zq8-9931-aa"}', "zq8-9931-aa"),
    ("password: hunter22", "hunter22"),
    ("huggingface-cli login --token plainvalue123", "plainvalue123"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEAx"),
]


@pytest.mark.parametrize("text,secret", CASES, ids=[c[1][:12] for c in CASES])
def test_secret_is_replaced(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out
    assert "<SECRET-1>" in out


@pytest.mark.parametrize("text", [
    "pad_token_id=50256 max_new_tokens=32 eos_token_id=2",
    "TOKENIZERS_PARALLELISM=false HSA_OVERRIDE_GFX_VERSION=10.3.0",
    "HIP_VISIBLE_DEVICES=0,1 ROCR_VISIBLE_DEVICES=0",
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    "Memory access fault by GPU node-1 (Agent handle: 0x55d0a8f2e570) on address 0x7f2a1c000000.",
    "https://github.com/ROCm/ROCm/issues/2536",
    "PWD=/work OLDPWD=/tmp",
    "HF_HUB_DISABLE_TELEMETRY=1 HF_TOKEN=$HF_TOKEN",
    # KB prose (kb/apt-repository-key-failure.yaml, hf-gated-model-access-denied.yaml, secure-boot-...)
    "the first step fails: `apt-key: command not found`.",
    "or export `HF_TOKEN=hf_...` in the environment of the service",
    "After the reboot check `mokutil --test-key <that file>` and `lsmod | grep amdgpu`.",
    "Invalid token: check your settings and try again",
    # shapes of the second round that must not fire on ordinary text
    "psql -h db -p 5432 -U me",
    "Enter passphrase for key '/root/.ssh/id_rsa': ",
    "the password is incorrect; the token was rejected",
    "basic usage: python -m diagnostics run",
    "env:\n  - name: HIP_VISIBLE_DEVICES\n    value: 0\n",
    "curl -b cookies.txt https://example.org",
    "2024-05-01 12:00:01 INFO step 12 loss 0.0123 lr 1e-4 tokens/s 5321.2 rank 0 worker ok\nDone in 3 s",
    "令牌无效，请检查设置",
    "https://github.com/ROCm/ROCm/issues/2536 and git@github.com:ROCm/ROCm.git",
])
def test_harmless_text_untouched(text: str) -> None:
    assert redact_text(text) == text


def test_secret_names() -> None:
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "PGPASSWORD",
                 "env.GITHUB_TOKEN", "db_password", "apiKey", "SLACK_BOT_TOKEN", "MY_CLIENT_SECRET"):
        assert is_secret_name(name), name
    for name in ("HSA_OVERRIDE_GFX_VERSION", "TOKENIZERS_PARALLELISM", "pad_token_id", "PWD", "HIP_VISIBLE_DEVICES",
                 "max_new_tokens", "KEYMAP"):
        assert not is_secret_name(name), name


def test_report_consistent_placeholders_and_not_mutated() -> None:
    rep = sample_report()
    before = json.dumps(rep)
    prev = preview_report(rep)
    out = prev["report"]
    assert json.dumps(rep) == before, "the input report must not be modified"
    text = json.dumps(out)
    for s in (HF_SECRET, GH_SECRET, PW_SECRET):
        assert s not in text
    # the HF token in the env fact and in the log get the same placeholder
    ph = out["facts"]["env.HF_TOKEN"]
    assert ph.startswith("<SECRET-")
    assert f"HF_TOKEN={ph}" in out["logs"][0]["text"]
    # different secrets, different placeholders
    kinds = {r["kind"] for r in prev["replacements"]}
    assert {"huggingface-token", "github-token", "url-password"} <= kinds or "secret-variable" in kinds
    assert len({r["placeholder"] for r in prev["replacements"]}) == len(prev["replacements"]) >= 3
    hf = [r for r in prev["replacements"] if r["placeholder"] == ph][0]
    assert "facts.env.HF_TOKEN" in hf["where"] and "logs[0].text" in hf["where"]
    # the preview never carries the secret itself
    assert HF_SECRET not in json.dumps(prev["replacements"])
    # the non-secret env fact is kept
    assert out["facts"]["env.HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    # identity is kept unless asked
    assert out["host"] == rep["host"] and "/home/alice/" in out["facts"]["python.executable"]


def test_redaction_is_idempotent() -> None:
    once = redact_report(sample_report(session_id="x"))
    assert redact_report(once) == once
    masked = redact_report(once, mask_identity=True)
    assert redact_report(masked, mask_identity=True) == masked


def test_identity_masking() -> None:
    rep = sample_report()
    prev = preview_report(rep, mask_identity=True)
    out = prev["report"]
    text = json.dumps(out)
    assert out["host"] == "<HOST>"
    assert "gpu-node-07" not in text
    assert "alice" not in text
    assert out["facts"]["python.executable"] == "/home/<USER>/venvs/llm/bin/python"
    assert prev["identity"]["<HOST>"] >= 1 and prev["identity"]["<USER>"] >= 2
    # unrelated words survive
    assert "Memory access fault by GPU node-1" in out["logs"][0]["text"]


def test_text_identity_from_home_path() -> None:
    out = redact_text("alice@box:~$ ls /home/alice/models; echo alice", mask_identity=True)
    assert "alice" not in out and out.count("<USER>") == 3


_ALNUM = string.ascii_letters + string.digits


@settings(max_examples=150, deadline=None)
@given(prefix=st.text(alphabet=string.printable, max_size=60), suffix=st.text(alphabet=string.printable, max_size=60),
       body=st.text(alphabet=_ALNUM, min_size=34, max_size=40),
       kind=st.sampled_from(["hf_", "ghp_", "github_pat_", "sk-"]))
def test_property_planted_token_never_survives(prefix: str, suffix: str, body: str, kind: str) -> None:
    secret = kind + body
    text = f"{prefix} {secret} {suffix}"
    out = redact_text(text)
    assert secret not in out
    assert redact_text(out) == out


# ------------------------------------------------------------------------------ the grammar, format by format
from tests.secret_formats import catalogue  # noqa: E402

FORMATS = catalogue()


def test_catalogue_has_at_least_80_formats() -> None:
    assert len(FORMATS) >= 80 and len({n for n, _, _ in FORMATS}) == len(FORMATS)


@pytest.mark.parametrize("name,text,secret", FORMATS, ids=[f[0] for f in FORMATS])
def test_every_format_is_removed(name: str, text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out, out[:300]
    assert "<SECRET-" in out
    assert redact_text(out) == out, "redacting twice changes nothing"


def test_all_formats_in_one_text_get_distinct_placeholders() -> None:
    from diagnostics.redact import Redactor

    r = Redactor()
    outs = [r.text(t, f"log{i}") for i, (_, t, _) in enumerate(FORMATS)]
    joined = "\n".join(outs)
    for _, _, s in FORMATS:
        assert s not in joined
    reps = r.replacements()
    assert len({x["placeholder"] for x in reps}) == len(reps)
    # the same secret again gets the same placeholder
    again = r.text(FORMATS[0][1])
    assert again == outs[0]


def test_new_secrets_are_numbered_after_placeholders_already_there() -> None:
    """A stored report already holds <SECRET-1>; a secret found again at export must not become <SECRET-1>."""
    rep = {"logs": [{"name": "a", "text": "HF_TOKEN=<SECRET-1> and <SECRET-2>"}],
           "notes": ["later pasted ghp_" + "A1b2C3d4E5" * 4]}
    prev = preview_report(rep)
    text = json.dumps(prev["report"])
    assert prev["replacements"][0]["placeholder"] == "<SECRET-3>" and text.count("<SECRET-1>") == 1


def test_secret_as_dict_key_is_removed() -> None:
    tok = "hf_" + "Zz9" * 12
    out = redact_report({"facts": {f"env.{tok}": "x", "ok": {tok: 1}}})
    assert tok not in json.dumps(out)
    # nor does it reach the places listed in the preview (stored under "redactions" at save)
    prev = preview_report({"facts": {f"env.{tok}": "x", "ok": {tok: "HF_TOKEN=abcdefgh12345"}}})
    assert tok not in json.dumps(prev) and prev["replacements"]


def test_key_block_without_end_runs_to_the_end_of_the_text() -> None:
    out = redact_text("before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nsecret-looking line")
    assert out == "before\n<SECRET-1>"


def test_paths_given_to_key_flags_are_not_secrets() -> None:
    text = "mokutil --test-key /var/lib/shim-signed/mok/MOK.der; curl --key ./client.pem; SSL_KEY=~/x.pem"
    assert redact_text(text) == text


def test_token_first_chars_cover_every_prefix() -> None:
    import re as _re

    from diagnostics.redact import _PREFIXES, TOKEN_FIRST_CHARS

    first = _re.compile(f"[{TOKEN_FIRST_CHARS}]")
    from tests.secret_formats import TOKENS

    kinds = {k for k, _ in _PREFIXES}
    assert len(kinds) >= 30
    for name, tok in TOKENS:
        assert first.match(tok), name


# ------------------------------------------------------------------------ generated cases: grammar x context
_VALUE_CHARS = string.ascii_letters + string.digits + "!#%&()*+,-./;?@[]^_{|}~"
_NAMES = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "db_password",
          "GITHUB_TOKEN", "client_secret", "WANDB_API_KEY", "apiKey", "NGC_API_KEY", "MY_PASSPHRASE"]
_CONTEXTS = {
    "env": lambda n, v: f"export {n}={v}",
    "env-quoted": lambda n, v: f'{n}="{v} and more words"',
    "powershell": lambda n, v: f'$env:{n} = "{v}"',
    "cmd": lambda n, v: f"set {n}={v}",
    "cmd-quoted": lambda n, v: f'set "{n}={v} x"',
    "yaml": lambda n, v: f"config:\n  {n}: {v}\n",
    "json": lambda n, v: json.dumps({n: v, "other": 1}),
    "ini": lambda n, v: f"[s]\n{n} = {v}\n",
    "flag": lambda n, v: f"python x.py --{n.lower()} {v} --verbose",
    "flag-eq": lambda n, v: f"python x.py --{n.lower().replace('_', '-')}={v}",
    "header": lambda n, v: f"{n.replace('_', '-')}: {v}",
    "url": lambda n, v: f"https://user:{v}@host.example/path",
    "url-empty-user": lambda n, v: f"redis://:{v}@cache:6379",
    "authorization": lambda n, v: f"Authorization: Bearer {v}",
    "netrc": lambda n, v: f"machine h.example login me password {v}",
    "pgpass": lambda n, v: f"db:5432:runs:me:{v}",
}


@settings(max_examples=400, deadline=None)
@given(ctx=st.sampled_from(sorted(_CONTEXTS)), name=st.sampled_from(_NAMES),
       value=st.text(alphabet=_VALUE_CHARS, min_size=8, max_size=80).filter(
           lambda v: v[0] not in "-/.~$%" and any(c.isalnum() for c in v[:4])),
       prefix=st.text(alphabet=string.ascii_letters + string.digits + " \n", max_size=30),
       suffix=st.text(alphabet=string.ascii_letters + string.digits + " \n", max_size=30))
def test_property_grammar_in_every_context(ctx: str, name: str, value: str, prefix: str, suffix: str) -> None:
    if ctx in ("url", "url-empty-user", "authorization", "netrc", "pgpass"):
        value = value.replace('"', "")
    if ctx == "json":
        value = value.replace("\\", "")
    assume(value not in prefix + suffix)
    from diagnostics.redact import _TRIVIAL_VALUES

    assume(value.lower() not in _TRIVIAL_VALUES)  # "true", "none", "undefined": placeholders of no secret
    text = prefix + "\n" + _CONTEXTS[ctx](name, value) + "\n" + suffix
    out = redact_text(text)
    assert value not in out, (ctx, out)
    assert redact_text(out) == out
    import diagnostics.redact as R

    old, R.PREFILTER_MIN = R.PREFILTER_MIN, 0
    try:  # the RE2 prefilter of long texts finds the same
        assert R.find_secrets(text) == R.find_secrets(text, prefilter=False), (ctx, text)
    finally:
        R.PREFILTER_MIN = old


@settings(max_examples=200, deadline=None)
@given(data=st.data(), prefix=st.text(alphabet=string.printable, max_size=40),
       suffix=st.text(alphabet=string.printable, max_size=40))
def test_property_token_shapes_anywhere(data, prefix: str, suffix: str) -> None:
    from tests.secret_formats import TOKENS

    _, tok = data.draw(st.sampled_from(TOKENS))
    assume(tok not in prefix + suffix)
    text = f"{prefix} {tok} {suffix}"
    out = redact_text(text)
    assert tok not in out
    assert redact_text(out) == out


@settings(max_examples=100, deadline=None)
@given(a=st.text(alphabet=string.ascii_letters + string.digits, min_size=12, max_size=30),
       b=st.text(alphabet=string.ascii_letters + string.digits, min_size=12, max_size=30))
def test_property_two_secrets_never_share_a_placeholder(a: str, b: str) -> None:
    out = redact_text(f"PASSWORD={a}\nAPI_KEY={b}\nagain PASSWORD={a}")
    p = [ln.split("=", 1)[1] for ln in out.splitlines()]
    assert p[0] == p[2]
    assert (p[0] == p[1]) == (a == b)


def test_long_texts_are_redacted_piecewise_with_the_same_result(monkeypatch) -> None:
    """Above CHUNK characters the text is redacted a chunk at a time; secrets near every cut still go, and
    a key block or a .netrc entry that straddles a would-be cut is not split."""
    import diagnostics.redact as R

    monkeypatch.setattr(R, "CHUNK", 2000)
    pieces, secrets = [], []
    for i, (_, text, secret) in enumerate(FORMATS):
        if "no-end" in FORMATS[i][0]:
            continue
        pieces.append(f"filler line {i} " + "x" * (i * 37 % 900) + "\n" + text + "\n")
        secrets.append(secret)
    pieces.append("-----BEGIN RSA PRIVATE KEY-----\n" + "QUJD\n" * 1500 + "tailSECRETkey\n")  # no END: to the end
    big = "".join(pieces)
    assert len(big) > 20 * R.CHUNK
    out = redact_text(big)
    for s in secrets + ["tailSECRETkey"]:
        assert s not in out
    monkeypatch.setattr(R, "CHUNK", 1 << 30)
    assert redact_text(big) == out, "piecewise and whole give the same text"


# ------------------------------------------------------------------ the RE2 prefilter agrees with the whole scan
def test_trigger_holds_every_secret_name_part() -> None:
    """The prefilter finds assignments by the parts of secret names: each suffix and infix holds one."""
    from diagnostics.redact import _NAME_PARTS, _SECRET_INFIXES, _SECRET_SUFFIXES

    for word in sorted(_SECRET_SUFFIXES) + list(_SECRET_INFIXES):
        assert any(p.upper() in word for p in _NAME_PARTS), word


_FILLER = ("2024-05-01 12:00:01 INFO step 12 loss 0.0123 lr 1e-4 tokens/s 5321.2 rank 0 worker ok\n"
           "    at torch/nn/modules/module.py:1501 in _call_impl\n"
           "HSA_OVERRIDE_GFX_VERSION=11.0.0 HIP_VISIBLE_DEVICES=0 pad_token_id=50256\n")


@pytest.mark.parametrize("name,text,secret", FORMATS, ids=[f[0] for f in FORMATS])
def test_prefilter_finds_what_the_whole_scan_finds(name: str, text: str, secret: str) -> None:
    from diagnostics.redact import PREFILTER_MIN, find_secrets

    big = _FILLER * (PREFILTER_MIN // len(_FILLER) + 1) + text + "\n" + _FILLER * 3
    assert len(big) > PREFILTER_MIN
    assert find_secrets(big) == find_secrets(big, prefilter=False)
    assert secret not in redact_text(big)


@settings(max_examples=150, deadline=None)
@given(picks=st.lists(st.sampled_from(range(len(FORMATS))), min_size=1, max_size=6),
       noise=st.lists(st.text(alphabet=string.printable, max_size=120), max_size=6))
def test_property_prefilter_agrees(picks, noise) -> None:
    import diagnostics.redact as R

    parts = [FORMATS[i][1] for i in picks] + noise
    text = "\n".join(parts[j] if j % 2 else parts[j] + " " + _FILLER for j in range(len(parts)))
    whole = R.find_secrets(text, prefilter=False)
    old = R.PREFILTER_MIN
    try:
        R.PREFILTER_MIN = 0
        assert R.find_secrets(text) == whole
    finally:
        R.PREFILTER_MIN = old


def test_wrap_continuation_takes_no_ordinary_word() -> None:
    """A secret that ends a long line joins the next line only when that looks like the rest of a token."""
    line = "x" * 60 + " HF_TOKEN=Zq9Vx3Lp7Tr2Ww"
    out = redact_text(line + "\nLoading checkpoint shards\n")
    assert out.endswith("HF_TOKEN=<SECRET-1>\nLoading checkpoint shards\n"), out
    out = redact_text(line + "\nAb12CdEf and more\n")
    assert out.endswith("HF_TOKEN=<SECRET-1> and more\n"), out


def test_prefilter_stays_fast_on_token_like_text() -> None:
    """Random alphanumerics, base64 lines and a dense run of token prefixes: the RE2 trigger's automaton must not
    blow up (a DFA out of memory falls back to a scan 20-50x slower: 6-25 s a MB here before the fix)."""
    import random
    import time

    from diagnostics.redact import _windows, find_secrets

    rnd = random.Random(3)
    al = string.ascii_letters + string.digits
    texts = ["".join(rnd.choice(al) for _ in range(400_000)),
             "\n".join("".join(rnd.choice(al + "+/") for _ in range(76)) for _ in range(5000)),
             " ".join(rnd.choice(["hf_", "sk-", "ghp_", "xoxb-", "AKIA", "eyJ", "LS0tLS1CRUdJTiB"])
                      + "".join(rnd.choice(al) for _ in range(rnd.randint(5, 60))) for _ in range(10000))]
    for t in texts:
        t0 = time.perf_counter()
        _windows(t)
        find_secrets(t)
        assert time.perf_counter() - t0 < 4.0, len(t)
