"""A catalogue of secret formats, each planted in the context where users paste it.

Every entry is (name, text, secret): ``text`` contains ``secret``, which must not survive redaction.  Token
shapes follow the vendors' documented formats (see the sources in diagnostics/redact.py); the values are
made up.  Used by tests/test_redact.py (the engine) and tests/test_secrets_e2e.py (every entry point).
"""
from __future__ import annotations

A36 = "Qm7VzR2kLpX9sT4bNc8WfYh3JdGa6EuKo1Za"  # 36 mixed alnum characters
HEX32 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
HEX64 = HEX32 * 2


def _fmt(i: int) -> str:
    """A distinct secret-ish filler for entry *i* (so no two entries share a secret)."""
    return f"Zq{i:03d}x" + A36[:20]


TOKENS = [
    ("hf", "hf_" + A36[:34]),
    ("hf-org", "api_org_" + A36[:34]),
    ("ghp", "ghp_" + A36),
    ("gho", "gho_" + A36),
    ("ghu", "ghu_" + A36),
    ("ghs", "ghs_" + A36),
    ("ghr", "ghr_" + A36),
    ("github-pat", "github_pat_11ABCDEFG0_" + A36 + A36),
    ("glpat", "glpat-" + A36[:20]),
    ("gldt", "gldt-" + A36[:24]),
    ("glrt", "glrt-" + A36[:24]),
    ("gitlab-runner", "GR1348941" + A36[:20]),
    ("xoxb", "xoxb-1234567890-0987654321-" + A36[:24]),
    ("xoxp", "xoxp-1234567890-0987654321-" + A36[:24]),
    ("xapp", "xapp-1-A0123456789-0123456789012-" + HEX32),
    ("xoxe", "xoxe.xoxp-1-" + A36) if False else ("xoxe", "xoxe-1-" + A36),
    ("sk", "sk-" + A36 + "T3BlbkFJ"),
    ("sk-proj", "sk-proj-" + A36 + "_" + A36),
    ("sk-ant", "sk-ant-api03-" + A36 + A36 + "-AA"),
    ("stripe-live", "sk_live_" + A36[:24]),
    ("stripe-restricted", "rk_live_" + A36[:24]),
    ("stripe-webhook", "whsec_" + A36),
    ("akia", "AKIAIOSFODNN7EXAMPLE"),
    ("asia", "ASIAY34FZKBOKMUTVV7A"),
    ("aiza", "AIzaSyD" + A36[:32]),
    ("ya29", "ya29.a0AfH6SM" + A36),
    ("gocspx", "GOCSPX-" + A36[:28]),
    ("npm", "npm_" + A36),
    ("pypi", "pypi-AgEIcHlwaS5vcmcCJ" + A36 + A36),
    ("nvapi", "nvapi-" + A36 + A36[:28]),
    ("dckr", "dckr_pat_" + A36[:27]),
    ("vault", "hvs." + A36 + "CAESI"),
    ("digitalocean", "dop_v1_" + HEX64),
    ("shopify", "shpat_" + HEX32),
    ("sendgrid", "SG." + A36[:22] + "." + A36 + "abcdefg"),
    ("replicate", "r8_" + A36 + "x"),
    ("groq", "gsk_" + A36 + "abcdefghijkl"),
    ("perplexity", "pplx-" + HEX32 + HEX32[:16]),
    ("grafana", "glsa_" + A36),
    ("linear", "lin_api_" + A36 + "abcdefgh"),
    ("postman", "PMAK-" + HEX32[:24] + "-" + HEX32 + "ab"),
    ("doppler", "dp.pt." + A36 + "abcdefghij"),
    ("pulumi", "pul-" + HEX32 + "01234567"),
    ("tailscale", "tskey-auth-k" + A36[:20]),
    ("supabase", "sbp_" + HEX32 + "01234567"),
    ("databricks", "dapi" + HEX32),
    ("atlassian", "ATATT3xFfGF0" + A36 + A36),
    ("heroku", "HRKU-" + A36),
    ("mailgun", "key-" + HEX32),
    ("twilio", "SK" + HEX32),
    ("age", "AGE-SECRET-KEY-1" + "QZ3" * 19 + "Q"),
    ("telegram", "123456789:AA" + A36[:33]),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("slack-webhook", "https://hooks.slack.com/services/T00000000/B00000000/" + A36[:24]),
    ("discord-webhook", "https://discord.com/api/webhooks/123456789012345678/" + A36 + A36),
    ("long-hf", "hf_" + "aB3" * 1700),
]

KEY_BODY = "MIIEowIBAAKCAQEAx9Rk2uZ0secretKEYbody7Jq\nQm7VzR2kLpX9sT4bNc8WfYh3JdGa6EuKo1Za0/+=="


def catalogue() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for name, tok in TOKENS:
        out.append((f"token-{name}", f"using {tok} now", tok))
    i = 0

    def nxt() -> str:
        nonlocal i
        i += 1
        return _fmt(i)

    more: list[tuple[str, str, str]] = []
    for kind in ("RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED ", ""):
        more.append((f"key-{kind.strip() or 'pkcs8'}",
                     f"cat id\n-----BEGIN {kind}PRIVATE KEY-----\n{KEY_BODY}\n-----END {kind}PRIVATE KEY-----\ndone",
                     "secretKEYbody"))
    more.append(("key-rsa-no-end", f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n(truncated)", "secretKEYbody"))
    more.append(("key-pgp", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{KEY_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
                 "secretKEYbody"))
    more.append(("key-pgp-no-end", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: x\n\n{KEY_BODY}", "secretKEYbody"))
    s = nxt(); more.append(("url-basic", f"git clone https://alice:{s}@github.com/x/y", s))
    s = nxt() + "@with/slash"; more.append(("url-at-slash", f"pip install --index-url https://bob:{s}@pypi.example/simple", s))
    s = nxt(); more.append(("url-empty-user", f"REDIS_URL redis://:{s}@cache:6379/0", s))
    s = nxt() + "%40pct"; more.append(("url-percent", f"postgresql://u:{s}@db/x", s))
    s = nxt(); more.append(("flag-hf_token", f"python serve.py --hf_token {s} --port 1", s))
    s = nxt(); more.append(("flag-api_key", f"python run.py --api_key {s}", s))
    s = nxt(); more.append(("flag-token-eq", f"huggingface-cli login --token={s}", s))
    s = nxt(); more.append(("flag-password", f"tool --password {s} --verbose", s))
    s = nxt(); more.append(("flag-api-key-quoted", f'tool --api-key "{s}"', s))
    s = nxt(); more.append(("flag-single-dash", f"app -token {s}", s))
    s = nxt(); more.append(("mysql-p", f"mysql -u root -p{s} mydb", s))
    s = nxt(); more.append(("sshpass", f"sshpass -p {s} ssh host", s))
    s = nxt(); more.append(("curl-u", f"curl -u alice:{s} https://api.example", s))
    s = nxt(); more.append(("curl-user", f"curl --user alice:{s} https://api.example", s))
    s = nxt(); more.append(("docker-login-p", f"docker login -u me -p {s} registry.example", s))
    s = nxt(); more.append(("wandb-login", f"wandb login {s}", s))
    s = nxt(); more.append(("env-export", f"export OPENAI_API_KEY={s}", s))
    s = nxt() + " two words"; more.append(("env-quoted-multiword", f'PASSWORD="{s}"', s))
    s = nxt() + ",comma;semi"; more.append(("env-comma-semicolon", f"DB_PASSWORD={s}", s))
    s = nxt(); more.append(("env-single-quoted", f"export HF_TOKEN='{s}'", s))
    s = nxt(); more.append(("powershell-env", f'$env:HF_TOKEN="{s}"', s))
    s = nxt(); more.append(("powershell-env-spaces", f"$env:OPENAI_API_KEY = '{s}'", s))
    s = nxt(); more.append(("powershell-setenv", f'[Environment]::SetEnvironmentVariable("HF_TOKEN", "{s}", "User")', s))
    s = nxt(); more.append(("cmd-set", f"set HF_TOKEN={s}", s))
    s = nxt() + " x"; more.append(("cmd-set-quoted", f'set "HF_TOKEN={s}"', s))
    s = nxt(); more.append(("cmd-setx", f"setx HF_TOKEN {s}", s))
    s = nxt(); more.append(("dockerfile-env", f"FROM x\nENV HF_TOKEN {s}\n", s))
    s = nxt(); more.append(("yaml", f"auth:\n  password: {s}\n", s))
    s = nxt(); more.append(("json", f'{{"api_key": "{s}", "x": 1}}', s))
    s = nxt() + '\\"esc'; more.append(("json-escaped-quote", f'{{"client_secret": "{s}"}}', s))
    s = nxt(); more.append(("ini", f"[db]\npassword = {s}\n", s))
    s = nxt(); more.append(("toml", f'token = "{s}"', s))
    s = nxt(); more.append(("python-dict", f"{{'secret_key': '{s}'}}", s))
    s = nxt(); more.append(("auth-bearer", f"Authorization: Bearer {s}", s))
    s = nxt(); more.append(("auth-basic", f'curl -H "Authorization: Basic {s}" https://x', s))
    s = nxt(); more.append(("auth-token", f"authorization: token {s}", s))
    s = nxt(); more.append(("auth-no-scheme", f"Authorization: {s}", s))
    s = nxt(); more.append(("cookie", f"Cookie: session={s}; theme=dark", s))
    s = nxt(); more.append(("set-cookie", f"Set-Cookie: sid={s}; HttpOnly", s))
    s = nxt(); more.append(("x-api-key", f"X-Api-Key: {s}", s))
    s = nxt(); more.append(("private-token", f"PRIVATE-TOKEN: {s}", s))
    s = nxt(); more.append(("netrc", f"machine api.example.com\n  login alice\n  password {s}\n", s))
    s = nxt(); more.append(("netrc-oneline", f"machine h login bob password {s}", s))
    s = nxt(); more.append(("pgpass", f"db.example.org:5432:runs:alice:{s}", s))
    s = nxt(); more.append(("pgpass-star", f"*:*:*:postgres:{s}", s))
    s = nxt(); more.append(("azure-connstr", f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};EndpointSuffix=core", s))
    s = nxt(); more.append(("url-query-token", f"GET https://api.example/v1?access_token={s}&x=1", s))
    s = nxt(); more.append(("long-password", "PASSWORD=" + s + "L" * 900, s + "L" * 900))
    return out + more
