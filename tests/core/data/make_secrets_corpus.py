# ruff: noqa: E501, T201  (a script that writes test data: long literal lines, prints a count)
"""Writes ``secrets_corpus.json``: fake secrets (random, seeded: never real ones) in context.

Run ``python tests/core/data/make_secrets_corpus.py`` to regenerate; the JSON is
committed so the corpus is fixed. A positive case lists the ``secrets`` that must
not survive ``scrub`` and the ``kind`` its marker names; a negative case must come
out unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

R = random.Random(20261122)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64URL = ALNUM + "-_"


def rand(chars: str, n: int) -> str:
    while True:
        s = "".join(R.choice(chars) for _ in range(n))
        # keys mix cases and digits; make sure every generated one does
        wants = [str.isupper, str.islower, str.isdigit]
        if all(any(w(c) for c in s) for w in wants if any(w(c) for c in chars)):
            return s


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def jwt() -> str:
    head = b64url({"alg": "HS256", "typ": "JWT"})
    body = b64url({"sub": str(R.randrange(10**9)), "name": "Fake User", "iat": 1700000000})
    return f"{head}.{body}.{rand(B64URL, 43)}"


def pem(label: str) -> str:
    lines = [rand(ALNUM + "+/", 64) for _ in range(6)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


anthropic = f"sk-ant-api03-{rand(B64URL, 93)}AA"
anthropic2 = f"sk-ant-admin01-{rand(B64URL, 60)}"
openai_legacy = f"sk-{rand(ALNUM, 48)}"
openai_proj = f"sk-proj-{rand(B64URL, 120)}"
aws_id = "AKIA" + rand(UPPER_DIGITS, 16)
aws_sts = "ASIA" + rand(UPPER_DIGITS, 16)
aws_secret = rand(ALNUM + "/+", 40)
ghp = "ghp_" + rand(ALNUM, 36)
gho = "gho_" + rand(ALNUM, 36)
ghs = "ghs_" + rand(ALNUM, 36)
ghu = "ghu_" + rand(ALNUM, 36)
ghr = "ghr_" + rand(ALNUM, 36)
gh_pat = "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59)
glpat = "glpat-" + rand(B64URL, 20)
slack_bot = f"xoxb-{R.randrange(10**11, 10**12)}-{R.randrange(10**11, 10**12)}-{rand(ALNUM, 24)}"
slack_user = f"xoxp-{R.randrange(10**11, 10**12)}-{R.randrange(10**11, 10**12)}-{rand(ALNUM, 32)}"
slack_hook = f"https://hooks.slack.com/services/T{rand(UPPER_DIGITS, 8)}/B{rand(UPPER_DIGITS, 8)}/{rand(ALNUM, 24)}"
google = "AIza" + rand(B64URL, 35)
stripe_live = "sk_live_" + rand(ALNUM, 24)
stripe_rk = "rk_live_" + rand(ALNUM, 24)
stripe_test = "sk_test_" + rand(ALNUM, 24)
npm = "npm_" + rand(ALNUM, 36)
pypi = "pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 60)
hf = "hf_" + rand(string.ascii_letters, 34)
token_jwt = jwt()
bearer = rand(B64URL, 40)
basic = base64.b64encode(b"deploy:" + rand(ALNUM, 16).encode()).decode()
rsa = pem("RSA PRIVATE KEY")
openssh = pem("OPENSSH PRIVATE KEY")
pkcs8 = pem("PRIVATE KEY")
ec = pem("EC PRIVATE KEY")
pgp = pem("PGP PRIVATE KEY BLOCK")
unterminated_body = rand(ALNUM + "+/", 64)
pw = [rand(ALNUM + "!@%^*_+", 14) for _ in range(20)]
azure = base64.b64encode(R.randbytes(64)).decode()
# drawn after the values above, so those stay what they were
pw2 = [rand(ALNUM + "!@%^*_+", 14) for _ in range(16)]
hex_key = rand("0123456789abcdef", 32)
hex_base = rand("0123456789abcdef", 128)
auth_token = rand(B64URL, 40)
kube_key = base64.b64encode(pem("RSA PRIVATE KEY").encode()).decode()
kube_cert = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n" + R.randbytes(96)).decode()
kube_token = rand(ALNUM, 48)

P: list[dict[str, object]] = []


def pos(text: str, kind: str, *secrets: str) -> None:
    P.append({"text": text, "kind": kind, "secrets": list(secrets)})


# vendor tokens, each in a few contexts
pos(f"export ANTHROPIC_API_KEY={anthropic}", "anthropic-key", anthropic)
pos(f'client = Anthropic(api_key="{anthropic2}")', "anthropic-key", anthropic2)
pos(f"x-api-key: {anthropic}\ncontent-type: application/json", "anthropic-key", anthropic)
pos(f"OPENAI_API_KEY={openai_legacy}", "openai-key", openai_legacy)
pos(f"openai.api_key = '{openai_proj}'", "openai-key", openai_proj)
pos(f"Error: Incorrect API key provided: {openai_proj}.", "openai-key", openai_proj)
pos(
    f"AWS_ACCESS_KEY_ID={aws_id}\nAWS_SECRET_ACCESS_KEY={aws_secret}", "aws-key", aws_id, aws_secret
)
pos(
    f"[default]\naws_access_key_id = {aws_sts}\naws_secret_access_key = {aws_secret}\n",
    "aws-key",
    aws_sts,
    aws_secret,
)
pos(f"found key {aws_id} in logs", "aws-key", aws_id)
pos(f"aws_secret_access_key={aws_secret}", "assignment", aws_secret)
pos(
    f"git remote set-url origin https://x-access-token:{ghs}@github.com/o/r.git",
    "github-token",
    ghs,
)
pos(f"GITHUB_TOKEN={ghp}", "github-token", ghp)
pos(f'{{"token": "{gho}", "scope": "repo"}}', "github-token", gho)
pos(f"gh auth login --with-token <<< {ghu}", "github-token", ghu)
pos(f"refresh: {ghr}", "github-token", ghr)
pos(f"export GH_TOKEN={gh_pat}", "github-token", gh_pat)
pos(
    f"curl --header 'PRIVATE-TOKEN: {glpat}' https://gitlab.example.com/api/v4/projects",
    "gitlab-token",
    glpat,
)
pos(f"SLACK_BOT_TOKEN={slack_bot}", "slack-token", slack_bot)
pos(f"client = WebClient(token='{slack_user}')", "slack-token", slack_user)
pos(f'curl -X POST -d \'{{"text":"hi"}}\' {slack_hook}', "slack-webhook", slack_hook)
pos(
    f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={google}",
    "google-key",
    google,
)
pos(f'const firebaseConfig = {{ apiKey: "{google}" }};', "google-key", google)
pos(f'stripe.api_key = "{stripe_live}"', "stripe-key", stripe_live)
pos(f"STRIPE_RESTRICTED={stripe_rk}", "stripe-key", stripe_rk)
pos(f"curl https://api.stripe.com/v1/charges -u {stripe_test}:", "stripe-key", stripe_test)
pos(f"//registry.npmjs.org/:_authToken={npm}", "npm-token", npm)
pos(f"[pypi]\n  username = __token__\n  password = {pypi}\n", "pypi-token", pypi)
pos(f"HF_TOKEN={hf}", "huggingface-token", hf)
pos(f"session cookie: {token_jwt}", "jwt", token_jwt)
pos(f'{{"id_token": "{token_jwt}", "expires_in": 3600}}', "jwt", token_jwt)
# authorization headers and bearer tokens
pos(f'curl -H "Authorization: Bearer {bearer}" https://api.example.com/v1/me', "bearer", bearer)
pos(f"authorization: Basic {basic}", "basic-auth", basic)
pos(f'headers = {{"Authorization": "token {bearer}"}}', "bearer", bearer)
pos(f"> GET /v1/items HTTP/1.1\n> Authorization: {bearer}\n", "bearer", bearer)
pos(f"Proxy-Authorization: Basic {basic}", "basic-auth", basic)
pos(f"Use Bearer {bearer} for the staging API", "bearer", bearer)
pos(f'wget --header="Authorization: Bearer {token_jwt}" https://x.example.com/f', "jwt", token_jwt)
# private keys
pos(f"$ cat ~/.ssh/id_rsa\n{rsa}\n$ ls", "private-key", rsa.splitlines()[2], rsa.splitlines()[5])
pos(openssh, "private-key", openssh.splitlines()[1])
pos(
    f'{{"private_key": "{pkcs8.replace(chr(10), chr(92) + "n")}\\n", "client_email": "x@y.iam"}}',
    "private-key",
    pkcs8.splitlines()[3],
)
pos(f"key:\n{ec}\nend", "private-key", ec.splitlines()[1])
pos(pgp, "private-key", pgp.splitlines()[4])
pos(
    f"output cut:\n-----BEGIN RSA PRIVATE KEY-----\n{unterminated_body}\n",
    "private-key",
    unterminated_body,
)
# .env-style and config assignments
pos(f"DB_PASSWORD={pw[0]}", "assignment", pw[0])
pos(f'export DATABASE_PASSWORD="{pw[1]}"', "assignment", pw[1])
pos(f"export SECRET_KEY='{pw[2]}'", "assignment", pw[2])
pos(f"database:\n  host: db\n  password: {pw[3]}\n  port: 5432", "assignment", pw[3])
pos(f'{{"username": "app", "password": "{pw[4]}"}}', "assignment", pw[4])
pos(f"JWT_SECRET={pw[5]}\nPORT=8080", "assignment", pw[5])
pos(f"client_secret: '{pw[6]}'", "assignment", pw[6])
pos(f"spring.datasource.password={pw[7]}", "assignment", pw[7])
pos(f"mysql --user=root --password={pw[8]} app", "assignment", pw[8])
pos(f"const config = {{ apiKey: '{pw[9]}', region: 'eu' }}", "assignment", pw[9])
pos(f"'password' => '{pw[10]}',", "assignment", pw[10])
pos(f'self.api_token = "{pw[11]}"', "assignment", pw[11])
pos(f"MY_APP_CREDENTIALS={pw[12]}", "assignment", pw[12])
pos(f"SMTP_PASS={pw[13]}", "assignment", pw[13])
pos(f"ENCRYPTION_KEY={pw[14]}", "assignment", pw[14])
pos(f"auth_token: {pw[15]}", "assignment", pw[15])
pos(f"set -x; REDIS_PASSWD={pw[16]} ./run.sh", "assignment", pw[16])
pos(f"password = {pw[17]}  # from the vault", "assignment", pw[17])
pos(f"X-Api-Key: {pw[18]}", "assignment", pw[18])
pos(f'    "accessToken": "{pw[19]}",', "assignment", pw[19])
# URLs with credentials and connection strings
pos(f"DATABASE_URL=postgres://app:{pw[0]}@db.internal:5432/app", "password", pw[0])
pos(
    f"mongodb+srv://admin:{pw[1]}@cluster0.abcd.mongodb.net/test?retryWrites=true",
    "password",
    pw[1],
)
pos(f"redis://:{pw[2]}@cache:6379/0", "password", pw[2])
pos(f"git clone https://deploy:{pw[3]}@git.example.com/team/repo.git", "password", pw[3])
pos(f"amqp://guest:{pw[4]}@rabbit/", "password", pw[4])
pos(
    f"Server=tcp:db.example.net,1433;Database=app;User ID=sa;Password={pw[5]};Encrypt=True;",
    "assignment",
    pw[5],
)
pos(f"Driver={{ODBC}};Server=db;Uid=app;Pwd={pw[6]};", "assignment", pw[6])
pos(
    f"DefaultEndpointsProtocol=https;AccountName=store;AccountKey={azure};EndpointSuffix=core.windows.net",
    "assignment",
    azure,
)
pos(f"jdbc:mysql://db:3306/app?user=app&password={pw[7]}&useSSL=true", "assignment", pw[7])
pos(f"curl -u admin:{pw[8]} https://jenkins.example.com/api/json", "password", pw[8])
pos(f"> Cookie: sessionid={pw[9]}; theme=dark", "cookie", pw[9])
pos(f"Set-Cookie: __Host-sid={pw[10]}; Path=/; Secure; HttpOnly", "cookie", pw[10])
# env prefixes, headers on command lines, .netrc, .pgpass, kubeconfig, password flags
pos(f"export PGPASSWORD={pw2[0]}", "assignment", pw2[0])
pos(f"PGPASSWORD={pw2[1]} psql -h db.internal -U app app", "assignment", pw2[1])
pos(f"MYSQL_PWD='{pw2[2]}' mysqldump app > app.sql", "assignment", pw2[2])
pos(f'curl -H "X-API-Key: {hex_key}" https://api.example.com/v1/items', "assignment", hex_key)
pos(
    f"curl -sS -H 'X-Auth-Token: {auth_token}' -X DELETE https://api.example.com/v1/items/3",
    "assignment",
    auth_token,
)
pos(f'wget --header="Api-Key: {hex_key}" https://example.com/export.csv', "assignment", hex_key)
pos(
    f"http GET https://api.example.com/me Private-Token:{auth_token} page==2",
    "assignment",
    auth_token,
)
pos(f'curl -H "Authorization: Token {auth_token}" https://api.example.com/me', "bearer", auth_token)
pos(f"machine api.example.com login deploy password {pw2[3]}", "password", pw2[3])
pos(
    f"machine github.com\n  login octocat\n  password {pw2[4]}\nmachine other.example.com",
    "password",
    pw2[4],
)
pos(
    f"echo 'machine ftp.example.com login anonymous password {pw2[5]}' >> ~/.netrc",
    "password",
    pw2[5],
)
pos(f"db.internal:5432:app:app_user:{pw2[6]}", "password", pw2[6])
pos(f"# hostname:port:database:username:password\n*:*:*:replicator:{pw2[7]}\n", "password", pw2[7])
pos(f'echo "localhost:5432:*:postgres:{pw2[8]}" > ~/.pgpass', "password", pw2[8])
pos(
    "users:\n- name: admin\n  user:\n"
    f"    client-certificate-data: {kube_cert}\n    client-key-data: {kube_key}\n"
    f"- name: ci\n  user:\n    token: {kube_token}\n",
    "assignment",
    kube_key,
    kube_token,
)
pos(f"SECRET_KEY_BASE={hex_base}", "assignment", hex_base)
pos(f"API_TOKEN_V2={auth_token}", "assignment", auth_token)
pos(f"export DB_PASSWORD_OLD='{pw2[9]}'", "assignment", pw2[9])
pos(f"mysql -uroot -p{pw2[10]} app < dump.sql", "password", pw2[10])
pos(f"mysql -h db -u app -p'{pw2[11]}' -e 'select 1'", "password", pw2[11])
pos(f"docker login -u ci -p {pw2[12]} registry.example.com", "password", pw2[12])
pos(f"podman login --password {pw2[13]} --username ci quay.io", "password", pw2[13])
pos(f"sshpass -p '{pw2[14]}' ssh -p 2222 deploy@host uptime", "password", pw2[14])
pos(f"redis-cli -h cache -p 6379 -a {pw2[15]} ping", "password", pw2[15])

N: list[str] = [
    "token_count = 5",
    "TOKENIZER=bpe",
    "password_field = form.password",
    "password = form.password",
    "password = getpass.getpass('Password: ')",
    "token = os.environ['GITHUB_TOKEN']",
    "api_key = settings.ANTHROPIC_API_KEY",
    "def login(user: str, password: str) -> Session:",
    "session = login(user=user, password=password)",
    "client = Client(api_key=api_key, timeout=30)",
    "if token == expected_token:",
    "password: str = ''",
    "    api_key: str | None = None",
    "max_tokens: 1024\ninput_tokens = 3_000",
    "PASSWORD=${DB_PASSWORD}",
    'export GITHUB_TOKEN="$(gh auth token)"',
    "DB_PASSWORD=",
    "auth: true\nsecret_name: app-secrets\ntoken_url: https://auth.example.com/token",
    "password: <your password here>",
    "Set the password: the one from the onboarding mail.",
    "Password reset links expire after an hour; the token is single-use.",
    "Bearer tokens are described in RFC 6750; send them in the Authorization header.",
    "The task-management service and the desk-booking app share a risk-assessment module.",
    "scikit-learn 1.5 and sk-learn are the same thing",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A Dev <dev@example.com>",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "git@github.com:anthropics/claude-code.git",
    "postgres://localhost:5432/app",
    "https://example.com/search?q=password+manager&page=2",
    "docker run -u 1000:1000 -e PORT=8080 app:latest",
    "git push -u origin main",
    "export PATH=$HOME/.local/bin:$PATH",
    "PWD=/home/dev/project\nOLDPWD=/home/dev",
    "headers['Authorization'] = f'Bearer {token}'",
    "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG...\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQY\n-----END PUBLIC KEY-----",
    "FAILED tests/test_auth.py::test_token_refresh - AssertionError: assert 401 == 200",
    "The AKIA prefix marks AWS access key ids.",
    "passwords: [REDACTED:assignment]",
    "        self.token = token",
    "_CHARS_PER_TOKEN = 3.5\nTOKEN_TTL_SECONDS = 3600",
    "Log in with the session cookie: the one /login sets.",
    'request = f"Authorization: Bearer {token}\\r\\n"',
    'assert "/login?token=" in done.out',
    "Every request needs the token: ``Authorization: Bearer <token>``",
    "open `/login?token=…` once; the password: `***`",
    'password = f"{prefix}-{suffix}"',
    "mysql -p",
    "mysql -u root -p app_db < dump.sql",
    "docker login -u user registry.example.com",
    'echo "$CR_PAT" | docker login ghcr.io -u ci --password-stdin',
    'docker login -u ci -p "$REGISTRY_PASSWORD" ghcr.io',
    "docker login ghcr.io && docker run -p 8080:80 nginx",
    "kubectl get pods -n default",
    "PGHOST=localhost\nPGPORT=5432\nPGUSER=app\nPGPASSFILE=~/.pgpass",
    "echo $PGPASSWORD",
    "ssh -p 2222 deploy@host",
    "psql -h db -p 5432 -U app app",
    "redis-cli -h cache -p 6379 ping",
    "sshpass -f ~/.sshpass ssh host",
    "curl -H 'Accept: application/json' -H \"X-Request-Id: 42ab\" https://api.example.com/v1",
    'wget --header="Content-Type: text/plain" https://example.com/upload',
    "The build machine uses password auth by default.",
    "fe80:1234:5678:9abc:def0\n12:30:45:00:01",
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "POSTGRES_PASSWORD_FILE=/run/secrets/db_password",
    "TOKEN_TTL_V2 = 3600",
]

out = {"positive": P, "negative": N}
Path(__file__).with_name("secrets_corpus.json").write_text(json.dumps(out, indent=1) + "\n")
print(len(P), "positive,", len(N), "negative")
