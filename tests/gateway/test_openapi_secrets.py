"""REST API credentials from a secrets file as well as the environment: the value reaches the
API and never the index; a credential that is not set fails the call before any request with
a message naming its configuration key; a secrets file that is missing, readable by everyone
or not TOML is refused naming ``secrets_file``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.gateway_runs import failure, run, text
from support.rest_app import TOKEN
from toolscout.config import Settings, load_settings
from toolscout.config.sections import ApiConfig, GatewaySettings, read_secrets
from toolscout.engine import Engine
from toolscout.errors import ConfigError
from toolscout.gateway.factory import build_gateway

ORDER: dict[str, object] = {"body": {"item": "book", "quantity": 2}}


def secrets_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "secrets.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def configured(settings: Settings, secrets: Path | None, **api: object) -> Settings:
    return settings.model_copy(
        update={
            "apis": {"shop": ApiConfig(spec="unused", **api)},  # type: ignore[arg-type]
            "secrets_file": str(secrets) if secrets else None,
            "gateway": GatewaySettings(allow_destructive=["shop::create_order"]),
        }
    )


def test_a_credential_from_the_secrets_file_reaches_the_api_and_not_the_index(
    shop_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    secrets = secrets_file(tmp_path, f'shop_key = "{TOKEN}"\n')
    config = configured(settings, secrets, headers_from_secrets={"X-API-Key": "shop_key"})
    result = run(
        build_gateway(shop_engine, config, []), lambda g: g.call("shop::create_order", ORDER)
    )
    assert not result.is_error, text(result)
    assert json.loads(text(result))["item"] == "book"
    stored = b"".join(p.read_bytes() for p in Path(settings.db).parent.glob("index.db*"))
    assert TOKEN.encode() not in stored


def test_a_secret_the_file_does_not_hold_fails_the_call_naming_its_key(
    shop_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    secrets = secrets_file(tmp_path, 'other = "x"\n')
    config = configured(settings, secrets, headers_from_secrets={"X-API-Key": "shop_key"})
    error = failure(build_gateway(shop_engine, config, []), "shop::create_order", ORDER)
    assert isinstance(error, ConfigError)
    assert "apis.shop.headers_from_secrets.X-API-Key" in str(error)
    assert "'shop_key' is not set in secrets_file" in str(error)


def test_an_unset_environment_variable_fails_the_call_naming_its_key(
    shop_engine: Engine, settings: Settings
) -> None:
    config = configured(settings, None, bearer_env="SHOP_TOKEN_NOT_SET")
    error = failure(build_gateway(shop_engine, config, []), "shop::get_weather", {"city": "Oslo"})
    assert isinstance(error, ConfigError)
    assert "apis.shop.bearer_env: 'SHOP_TOKEN_NOT_SET' is not set in the environment" in str(error)


def test_bearer_tokens_come_from_either_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_TOKEN", "from-env")
    by_env = ApiConfig(spec="x", bearer_env="SHOP_TOKEN").credentials("shop", {})
    by_file = ApiConfig(spec="x", bearer_secret="token").credentials("shop", {"token": "kept"})
    assert by_env == ({"Authorization": "Bearer from-env"}, [])
    assert by_file == ({"Authorization": "Bearer kept"}, [])


def test_secrets_named_without_a_secrets_file_are_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "toolscout.toml"
    config.write_text('[apis.shop]\nspec = "x.json"\nbearer_secret = "token"\n', encoding="utf-8")
    monkeypatch.setenv("TOOLSCOUT_CONFIG", str(config))
    with pytest.raises(ConfigError, match=r"apis\.shop: names secrets .* no secrets_file is set"):
        load_settings()


def test_the_secrets_file_is_named_in_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = secrets_file(tmp_path, 'token = "abc"\n')
    config = tmp_path / "toolscout.toml"
    config.write_text(
        f'secrets_file = "{secrets}"\n[apis.shop]\nspec = "x.json"\nbearer_secret = "token"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("TOOLSCOUT_CONFIG", str(config))
    settings = load_settings()
    assert settings.secrets() == {"token": "abc"}


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_secrets_file_readable_by_everyone_is_refused(tmp_path: Path) -> None:
    path = secrets_file(tmp_path, 'token = "abc"\n', mode=0o644)
    with pytest.raises(ConfigError, match=r"secrets_file: .* readable by every user .* chmod 600"):
        read_secrets(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("token = abc\n", "is not TOML"),
        ("token = 3\n", "token must be strings"),
    ],
)
def test_a_malformed_secrets_file_is_refused(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"secrets_file: .*{message}"):
        read_secrets(secrets_file(tmp_path, content))


def test_a_missing_secrets_file_is_refused_when_the_gateway_starts(
    shop_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    config = configured(settings, tmp_path / "absent.toml", bearer_secret="token")
    with pytest.raises(ConfigError, match=r"secrets_file: cannot read .*absent\.toml"):
        build_gateway(shop_engine, config, [])
