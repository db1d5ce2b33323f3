"""generated/ is the committed render of the default config: CI fails when it is stale."""

from pathlib import Path

from obspack.config import ObspackConfig
from obspack.pack import build
from obspack.render.files import pack_files
from obspack.render.write import diff

ROOT = Path(__file__).resolve().parents[1]


def test_generated_folder_is_up_to_date() -> None:
    result = diff(ROOT / "generated", pack_files(build(ObspackConfig())))
    assert result.clean, (
        f"generated/ is stale (missing {result.missing}, stale {result.stale}, extra {result.extra}): "
        "run `obspack render --out generated --helm helm/obspack`"
    )
