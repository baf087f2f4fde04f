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
    return out + more + catalogue_round2()


def _wrapped(name: str, line: str, secret: str, width: int = 80) -> tuple[str, str, str]:
    """*line* hard-wrapped at *width* columns, as a terminal or a pager copies it; the secret to look for is the
    part of *secret* on the line after the break (the part before it is an ordinary format)."""
    text = "\n".join(line[i:i + width] for i in range(0, len(line), width))
    at = line.index(secret)
    cut = (at // width + 1) * width  # where the first break inside the secret falls
    assert at < cut < at + len(secret), name
    return name, text, secret[cut - at:][: width]


def catalogue_round2() -> list[tuple[str, str, str]]:
    """Issue 16, second round: formats an attacker tried that the first catalogue did not hold (each leaked
    before diagnostics/redact.py learned its shape, except where noted as a context variant)."""
    i = 500

    def nxt() -> str:
        nonlocal i
        i += 1
        return _fmt(i)

    out: list[tuple[str, str, str]] = []
    s = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + nxt()
    out.append(("aws-credentials-file", f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPL2\n"
                                        f"aws_secret_access_key = {s}\nregion = us-east-1\n", s))
    s = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz" + nxt()
    out.append(("aws-session-token", f"[prof]\naws_session_token={s}\n", s))
    s = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj" + nxt()
    out.append(("gcp-service-account-json",
                '{"type": "service_account", "project_id": "p", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
                + s + '\\nQm7VzR2kLpX9sT4bNc8W\\n-----END PRIVATE KEY-----\\n", "client_email": "x@p.iam.gserviceaccount.com"}',
                s))
    s = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
    out.append(("azure-storage-connection-string",
                f"AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};"
                "EndpointSuffix=core.windows.net\"", s))
    s = nxt() + "abcdEFGH="
    out.append(("azure-servicebus-sas-key",
                f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}", s))
    s = nxt() + "%2Babc%3D"
    out.append(("azure-sas-url", f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&se=2026-01-01&sig={s}", s))
    s = "hf_" + nxt() + "Ab3Cd4Ef5Gh"
    out.append(("hf-cli-login-token", f"$ huggingface-cli login --token {s} --add-to-git-credential", s))
    s = nxt()
    out.append(("git-clone-oauth2-user", f"git clone https://oauth2:{s}@gitlab.example.com/team/repo.git", s))
    s = "github" + nxt() + "Zk"
    out.append(("git-clone-token-as-user", f"git clone https://{s}@github.com/org/private.git", s))
    s = "0123456789abcdef0123456789abcdef"
    out.append(("sentry-dsn", f"SENTRY_DSN_URL https://{s}@o12345.ingest.sentry.io/4504", s))
    s = nxt()
    out.append(("docker-login-p-glued", f"docker login -u me -p{s} registry.example", s))
    s = nxt() + "!"
    out.append(("docker-login-password-stdin", f"echo '{s}' | docker login --username me --password-stdin ghcr.io", s))
    s = "ghp_" + nxt() + "abcdefghij"
    out.append(("gh-auth-with-token", f"echo {s} | gh auth login --with-token", s))
    s = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ" + nxt() + "9."
    out.append(("jwt-unsigned", f"id_token {s} (alg none)", s))
    s = "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.OKOawDo13gRp2oj" + nxt() + ".48V1_ALb6US04U3b.5eym8TW_c8SuK.XFBoMYUZodetZdvTiFvSkQ"
    out.append(("jwe-five-parts", f"token: {s}", s))
    s = "abc.def-ghi_" + nxt()
    out.append(("json-log-bearer", '{"level":"info","req":{"headers":{"authorization": "Bearer ' + s + '"}}}', s))
    s = nxt() + "x9"
    out.append(("json-log-escaped-bearer", '{"msg":"{\\"Authorization\\":\\"Bearer ' + s + '\\"}"}', s))
    s = "sk-svcacct-" + A36 + nxt()
    out.append(("openai-service-account-key", f"OPENAI key={s}", s))
    s = "sk-ant-admin01-" + A36 + nxt()
    out.append(("anthropic-admin-key", f"using {s}", s))
    s = "sk_test_51H" + A36 + nxt()
    out.append(("stripe-test-key", f"stripe.api_key = '{s}'", s))
    s = nxt()
    out.append(("slack-workflow-webhook", f"curl -X POST https://hooks.slack.com/workflows/T0ABCDEF1/A0ABCDEF2/123456789/{s}", s))
    s = nxt() + "QQ"
    out.append(("slack-trigger-webhook", f"POST https://hooks.slack.com/triggers/T0ABCDEF1/1234567890/{s}", s))
    s = "local-0123456789abcdef0123456789abcdef" + "01234567"
    out.append(("wandb-login-local-key", f"wandb login --relogin {s} --host http://wandb.local", s))
    s = nxt() + "!"
    out.append(("yaml-password-list-item", f"users:\n  - name: svc\n    password: {s}\n", s))
    s = nxt()
    out.append(("yaml-block-scalar", f"secrets:\n  api_token: |\n    {s}\n    more-of-it-9Zq\nnext: 1\n", s))
    s = nxt() + "=="
    out.append(("k8s-secret-data", f"apiVersion: v1\nkind: Secret\ndata:\n  password: {s}\n", s))
    s = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB" + nxt()
    out.append(("kubeconfig-client-key-data", f"users:\n- name: admin\n  user:\n    client-key-data: {s}\n", s))
    s = "kube" + nxt()
    out.append(("kubeconfig-token", f"users:\n- name: admin\n  user:\n    token: {s}\n", s))
    s = nxt()
    out.append(("kubeconfig-refresh-token", f"      auth-provider:\n        config:\n          refresh-token: {s}\n", s))
    s = nxt()
    out.append(("kubectl-token-flag", f"kubectl --token={s} get pods -A", s))
    s = nxt()
    out.append(("env-file-export-quoted", f"# .env\nexport ANTHROPIC_API_KEY=\"{s}\"\nexport DEBUG=1\n", s))
    s = nxt()
    out.append(("windows-set-prompt", f"C:\\Users\\me> set OPENAI_API_KEY={s}", s))
    s = nxt()
    out.append(("powershell-Env-case", f"PS C:\\> $Env:HF_TOKEN='{s}'", s))
    s = "hf_" + A36[:30] + "Wr4p" + nxt()
    out.append(_wrapped("wrapped-token-bare", "2024-05-01 12:00:01 INFO loading gated model with token " + s
                        + " from the hub now", s))
    s = "Wr" + nxt() + A36
    out.append(_wrapped("wrapped-bearer-header", "2024-05-01 12:00:02 DEBUG sending headers={'Authorization': 'Bearer "
                        + s + "'} to the api", s))
    s = "hf_" + nxt() + A36[:14]
    out.append(_wrapped("wrapped-env-assignment", " " * 50 + "export HF_TOKEN=" + s, s))
    s = "fw" + nxt()
    out.append(("fullwidth-equals", f"我的令牌设置为 HF_TOKEN＝{s} 谢谢", s))
    s = "mm" + nxt()
    out.append(("chinese-password-colon", f"数据库密码：{s} 登录失败", s))
    s = "zh" + nxt()
    out.append(("chinese-key-fullwidth-colon", f"API_KEY：{s} 报错了", s))
    s = "ps" + nxt()
    out.append(("chinese-password-is", f"服务器的密码是 {s}，请帮忙看看", s))
    s = "tk" + nxt()
    out.append(("chinese-token-ideographic-space", f"令牌：\u3000{s}", s))
    s = "YWxpY2U6czNjcjN0cGFzc3dvcmQxMjM="
    out.append(("basic-auth-bare", f"sent Basic {s} to the proxy", s))
    s = "p%40ss%2Fw0rd%21" + nxt()
    out.append(("url-percent-encoded-password", f"pip download --index-url https://alice:{s}@pypi.example/simple x", s))
    s = "Pa%3Ass%40" + nxt()
    out.append(("mongodb-srv-url", f"MONGO_URL=mongodb+srv://admin:{s}@cluster0.x.mongodb.net/db", s))
    s = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + nxt()
    out.append(("openssh-key-indented", f"  -----BEGIN OPENSSH PRIVATE KEY-----\n  {s}\n  -----END OPENSSH PRIVATE KEY-----\n", s))
    s = "ssh2BODY" + nxt()
    out.append(("ssh2-rfc4716-key", f"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\n{s}\n"
                                    "---- END SSH2 ENCRYPTED PRIVATE KEY ----", s))
    s = nxt()
    out.append(("query-password", f"GET /login?user=bob&password={s} HTTP/1.1", s))
    s = nxt()
    out.append(("query-token-middle", f"https://api.example/x?a=1&token={s}&b=2", s))
    s = "0123456789abcdef0123456789abcdef" + nxt()
    out.append(("query-amz-signature", f"https://b.s3.amazonaws.com/o?X-Amz-Date=1&X-Amz-Signature={s}", s))
    s = "npmrc" + nxt()
    out.append(("npmrc-auth-token", f"//registry.npmjs.org/:_authToken={s}", s))
    s = "ZG9ja2VyOnNlY3JldHBhc3M" + nxt() + "="
    out.append(("docker-config-auth", '{"auths": {"https://index.docker.io/v1/": {"auth": "' + s + '"}}}', s))
    s = nxt()
    out.append(("pip-conf-token-url", f"[global]\nextra-index-url = https://__token__:{s}@pypi.example/simple\n", s))
    s = nxt()
    out.append(("jdbc-password", f"jdbc:mysql://db:3306/x?user=root&password={s}", s))
    s = nxt()
    out.append(("odbc-pwd", f"Driver={{ODBC Driver 18}};Server=x;Uid=sa;Pwd={s};Encrypt=yes", s))
    s = nxt()
    out.append(("xml-password-element", f"<settings><password>{s}</password></settings>", s))
    s = nxt()
    out.append(("dotnet-appsettings", f'<add key="ApiKey" value="{s}" />', s))
    s = nxt()
    out.append(("aws-configure-set", f"aws configure set aws_secret_access_key {s} --profile ci", s))
    s = nxt()
    out.append(("npm-config-set", f"npm config set //registry.example/:_authToken {s}", s))
    s = nxt()
    out.append(("password-in-words", f"the password is {s} for the vm", s))
    s = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe." + nxt() + "abcdefghijklm"
    out.append(("discord-bot-token", f"bot.run('{s}')", s))
    s = nxt()
    out.append(("python-kwarg-token", f'login(token="{s}")', s))
    s = nxt()
    out.append(("header-x-hf-token", f"X-HF-Token: {s}", s))
    s = nxt()
    out.append(("azure-openai-api-key-header", f"curl -H 'api-key: {s}' https://x.openai.azure.com", s))
    # the attacker's second batch
    s = nxt()
    out.append(("python-environ-subscript", f'os.environ["HF_TOKEN"] = "{s}"', s))
    s = nxt()
    out.append(("python-environ-setdefault", f'os.environ.setdefault("WANDB_API_KEY", "{s}")', s))
    s = nxt()
    out.append(("go-os-setenv", f'os.Setenv("GITHUB_TOKEN", "{s}")', s))
    s = nxt()
    out.append(("k8s-env-name-value", f"env:\n  - name: HF_TOKEN\n    value: {s}\n", s))
    s = nxt() + " two"
    out.append(("k8s-env-name-value-quoted", f'env:\n- name: "DB_PASSWORD"\n  value: "{s}"\n', s))
    s = nxt()
    out.append(("mysql-pwd-env", f"MYSQL_PWD={s} mysql -u root", s))
    s = nxt()
    out.append(("redis-cli-a", f"redis-cli -h cache -a {s} ping", s))
    s = "s." + nxt()
    out.append(("vault-login-legacy-token", f"vault login {s}", s))
    s = nxt()
    out.append(("smbclient-user-percent", f"smbclient //srv/share -U alice%{s}", s))
    s = "ab-" + nxt()
    out.append(("conda-channel-token", f"channels:\n  - https://conda.anaconda.org/t/{s}/private\n", s))
    s = "AAH" + nxt() + "dqTcvCH1vGW"
    out.append(("telegram-bot-url", f"https://api.telegram.org/bot123456789:{s}/sendMessage", s))
    s = nxt()
    out.append(("name-digit-suffix", f"HF_TOKEN2={s}", s))
    s = nxt()
    out.append(("name-digit-part", f"API_KEY_2={s}", s))
    s = nxt()
    out.append(("session-id", f"sessionid={s}; path=/", s))
    s = nxt()
    out.append(("php-session-id", f"PHPSESSID={s}", s))
    s = nxt() + "~v"
    out.append(("az-login-p", f"az login --service-principal -u 1234 -p {s} --tenant t", s))
    s = nxt()
    out.append(("oc-login-p", f"oc login -u dev -p {s} https://api.cluster:6443", s))
    s = nxt()
    out.append(("ldapsearch-w", f"ldapsearch -x -D cn=admin -w {s} -b dc=x", s))
    s = nxt()
    out.append(("curl-b-cookie", f"curl -b 'session={s}' https://x", s))
    s = "sk" + nxt()
    out.append(("chinese-english-key-is", f"我的 api key 是 {s}", s))
    s = nxt()
    out.append(("github-actions-add-mask", f"::add-mask::{s}", s))
    s = nxt()
    out.append(("fish-set-gx", f"set -gx HF_TOKEN {s}", s))
    s = nxt()
    out.append(("csh-setenv", f"setenv HF_TOKEN {s}", s))
    s = nxt()
    out.append(("openssl-passin", f"openssl rsa -in k.pem -passin pass:{s} -out x", s))
    s = nxt()
    out.append(("systemd-environment", f'Environment="HF_TOKEN={s}" "X=1"', s))
    s = nxt()
    out.append(("kubectl-from-literal", f"kubectl create secret generic x --from-literal=password={s}", s))
    s = nxt()
    out.append(("cifs-mount-options", f"mount -t cifs //s/x /mnt -o username=u,password={s},vers=3", s))
    s = nxt() + "!"
    out.append(("echo-sudo-S", f"echo '{s}' | sudo -S apt-get install -y rocm-hip-sdk", s))
    s = nxt()
    out.append(("oauth-fragment", f"https://app.example/cb#access_token={s}&token_type=bearer", s))
    return out
