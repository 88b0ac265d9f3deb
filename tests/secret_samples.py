"""Planted secrets (one or more per format) and look-alikes that must survive, shared by the
redaction tests. Every value is synthetic: made to the provider's documented shape, valid for
nothing."""

from __future__ import annotations

import base64
import random

_rng = random.Random(16)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _chars(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _hex(n: int) -> str:
    return _chars(n, "0123456789abcdef")


def _pem(label: str, body_lines: int = 4) -> str:
    body = "\n".join(base64.b64encode(bytes(_rng.getrandbits(8) for _ in range(48))).decode() for _ in range(body_lines))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# (kind, the text an agent might see, the secret part that must not reach disk)
def _sample(kind: str, template: str, secret: str) -> tuple[str, str, str]:
    return kind, template.format(secret), secret


SAMPLES: list[tuple[str, str, str]] = [
    *[_sample("private_key", "{}", _pem(f"{label}PRIVATE KEY")) for label in ("RSA ", "EC ", "DSA ", "OPENSSH ", "", "ENCRYPTED ")],
    _sample("private_key", "{}", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF" + _chars(60)
            + "\n=" + _chars(4) + "\n-----END PGP PRIVATE KEY BLOCK-----"),
    _sample("private_key", "{}", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"key\"\nP2/56wAAA" + _chars(60)
            + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"),
    _sample("private_key", "{}", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\nAAAAC3Nz"
            + _chars(40) + "\nPrivate-Lines: 1\nAAAAI" + _chars(40) + "\nPrivate-MAC: " + _hex(64)),
    _sample("anthropic_key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-" + _chars(93) + "AA"),
    _sample("openai_key", "client = OpenAI(api_key=\"{}\")", "sk-proj-" + _chars(48)),
    _sample("openai_key", "key {}", "sk-" + _chars(20) + "T3BlbkFJ" + _chars(20)),
    _sample("aws_access_key", "aws_access_key_id = {}", "AKIA" + _chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
    _sample("aws_access_key", "{}", "ASIA" + _chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
    _sample("aws_secret_key", "aws_secret_access_key = {}", _chars(30) + "/" + _chars(9)),
    _sample("aws_secret_key", '{{"SecretAccessKey": "{}"}}', _chars(20) + "+" + _chars(19)),
    _sample("github_token", "git clone https://{}@github.com/o/r", "ghp_" + _chars(36)),
    _sample("github_token", "GH_TOKEN={}", "github_pat_11" + _chars(20) + "_" + _chars(59)),
    _sample("github_token", "{}", "ghs_" + _chars(36)),
    _sample("gitlab_token", "PRIVATE-TOKEN: {}", "glpat-" + _chars(20)),
    _sample("slack_token", "SLACK_BOT={}", "xoxb-" + _chars(12, "0123456789") + "-" + _chars(13, "0123456789") + "-" + _chars(24)),
    _sample("slack_token", "{}", "xoxp-" + _chars(11, "0123456789") + "-" + _chars(11, "0123456789") + "-" + _chars(30)),
    _sample("slack_webhook", "curl -X POST https://{}", "hooks.slack.com/services/T" + _chars(8) + "/B" + _chars(8) + "/" + _chars(24)),
    _sample("stripe_key", "stripe.api_key = '{}'", "sk_live_" + _chars(24)),
    _sample("stripe_key", "{}", "rk_live_" + _chars(24)),
    _sample("google_api_key", "https://maps.googleapis.com/maps/api/js?key={}&callback=init", "AIza" + _chars(35, _ALNUM + "_-")),
    _sample("twilio_key", "TWILIO_API_KEY_SID {}", "SK" + _hex(32)),
    _sample("twilio_key", "Client(\"{}\", auth)", "AC" + _hex(32)),
    _sample("twilio_key", "client = Client(\"AC" + _hex(32) + "\", \"{}\")", _hex(32)),
    _sample("secret_assignment", "TWILIO_AUTH_TOKEN={}", _hex(32)),
    _sample("huggingface_token", "huggingface-cli login --token {}", "hf_" + _chars(34, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")),
    _sample("npm_token", "//registry.npmjs.org/:_authToken={}", "npm_" + _chars(36)),
    _sample("sendgrid_key", "SENDGRID_KEY {}", "SG." + _chars(22) + "." + _chars(43)),
    _sample("jwt", "cookie: session={}", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
            + _chars(43, _ALNUM + "_-")),
    _sample("url_password", "DATABASE_URL=postgres://admin:{}@db.internal:5432/prod", "S3cr" + _chars(10) + "!x"),
    _sample("url_password", "mongodb+srv://app:{}@cluster0.example.net/test", _chars(16)),
    _sample("url_password", "redis://:{}@cache:6379/0", _chars(12)),
    _sample("secret_assignment", "export DB_PASSWORD={}", "Tr0ub4dor&3x"),
    _sample("secret_assignment", "MY_SERVICE_SECRET='{}'", _chars(24)),
    _sample("secret_assignment", "WEATHER_API_KEY: {}", _hex(32)),
    _sample("secret_assignment", '{{"client_secret": "{}"}}', "GOCSPX-" + _chars(28)),
    _sample("secret_assignment", "password: {}", "Hunter2" + _chars(6)),
    _sample("azure_storage_key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
            _chars(86, _ALNUM + "+/") + "=="),
    _sample("bearer_token", "curl -H 'Authorization: Bearer {}' https://api.example.com", _chars(40, _ALNUM + "._-")),
    _sample("bearer_token", "the API wants Bearer {} in the header", "ya29.a0" + _chars(60)),
    _sample("basic_auth", "Authorization: Basic {}", base64.b64encode(b"admin:" + _chars(12).encode()).decode()),
    _sample("gcp_service_account", '{{"type": "service_account", "project_id": "p", "private_key_id": "{}"}}', _hex(40)),
    _sample("pypi_token", "TWINE_PASSWORD {}", "pypi-AgEIcHlwaS5vcmc" + _chars(60, _ALNUM + "_-")),
    _sample("shopify_token", "{}", "shpat_" + _hex(32)),
    _sample("digitalocean_token", "{}", "dop_v1_" + _hex(64)),
    _sample("linear_api_key", "{}", "lin_api_" + _chars(40)),
    _sample("databricks_token", "{}", "dapi" + _hex(32)),
    _sample("vault_token", "VAULT {}", "hvs." + _chars(100, _ALNUM + "_-")),
    _sample("postman_api_key", "{}", "PMAK-" + _hex(24) + "-" + _hex(34)),
    _sample("doppler_token", "{}", "dp.st." + _chars(40)),
    _sample("age_secret_key", "{}", "AGE-SECRET-KEY-1" + _chars(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")),
    _sample("sentry_token", "{}", "sntryu_" + _hex(64)),
    _sample("grafana_token", "{}", "glsa_" + _chars(32) + "_" + _hex(8)),
    _sample("pulumi_token", "{}", "pul-" + _hex(40)),
    _sample("square_token", "{}", "sq0atp-" + _chars(22, _ALNUM + "_-")),
    _sample("heroku_api_key", "{}", "HRKU-AA" + _chars(58)),
    _sample("atlassian_token", "{}", "ATATT3" + _chars(186)),
    _sample("telegram_bot_token", "https://api.telegram.org/bot123456789:{}/getMe", "AA" + _chars(33)),
]
# the GCP service-account file as a whole: its private key goes as a private_key
GCP_FILE = ('{\n  "type": "service_account",\n  "project_id": "demo",\n  "private_key_id": "' + _hex(40) + '",\n'
            '  "private_key": "' + _pem("PRIVATE KEY").replace("\n", "\\n") + '\\n",\n'
            '  "client_email": "svc@demo.iam.gserviceaccount.com"\n}')

_PNG = base64.b64encode(bytes(_rng.getrandbits(8) for _ in range(3000))).decode()

# what agents handle all day and must come through byte for byte
LOOK_ALIKES: list[str] = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)", "git checkout 9fceb02",
    "request id 123e4567-e89b-12d3-a456-426614174000", "ACCEPTED 550e8400-e29b-41d4-a716-446655440000",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/app.tar.gz",
    "md5 d41d8cd98f00b204e9800998ecf8427e, SKIPPED 3, ACK",
    "data:image/png;base64," + _PNG, _PNG,
    '<div class="flex items-center justify-between px-4 py-2 sk-button task-list desk-0123456789abcdefghij">',
    "Use a Bearer token from the vault; Bearer authentication is also called token authentication.",
    "The password must be at least 12 characters. Reset your password: see the docs.",
    "token: the next token in the stream", "max_tokens: 4096", "prompt_tokens=1000",
    "API_KEY=your-api-key-here", "password: ${DB_PASSWORD}", "token = os.environ['GITHUB_TOKEN']",
    "api_key: Optional[str] = None", "SECRET_KEY = settings.SECRET_KEY", "Authorization: Bearer $TOKEN",
    "headers = {'Authorization': f'Bearer {token}'}", "password = getpass.getpass()", "token: str",
    "postgres://user:password@localhost/db", "postgres://app@localhost:5432/app", "http://localhost:8080/api",
    "https://github.com/org/repo/pull/42", "git@github.com:org/repo.git", "mail jane.doe@example.com",
    "ghp_short sk-short AKIAlower0000000000000 hf_short npm_install SG.tiny xoxb- glpat-",
    "the task-list is long; ask-anthropic-about-it", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHBfpegPjMCMA0GCSqGSIb3DQEBBQUAMBExDzANBgNVBAMMBnVudXNlZDAeFw0\n-----END CERTIFICATE-----",
    "The file must start with -----BEGIN PRIVATE KEY----- and end with the END line.",
    "time 12:30:45, ratio 3:2, C:\\Users\\me", "npm_config_cache=/tmp/npm", "hooks.slack.com is Slack's webhook host",
    "eyJhbGciOiJIUzI1NiJ9 alone is a header, not a token",
]
