"""Animated decoding (anatomy/export.py, viz/animation.py): one opening frame and one frame per generated piece,
each frame showing exactly its step's attention, read back from the pixels; GIF, MP4 and PNG-ZIP files; the
command."""
from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import gc
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import gradio as gr
import numpy as np
import plotly.colors as pc
import pytest
from PIL import Image, ImageFont

import viz
from anatomy import attention_views, export, views
from anatomy.inputs import View
from tests.app_fixtures import SENTENCE, make_checkpoint, run_of
from tests.browser import needs_chromium
from transformer import Translator
from transformer.kinds import CROSS, DECODER
from viz import animation as anim
from viz.common import ATTENTION_STOPS

ROOT = Path(__file__).resolve().parents[1]
STEPS = 9  # the tiny random model never ends early: every trace here has this many steps


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export-checkpoints")
    make_checkpoint(root / "tiny-de-en", "de", "en")
    return root


@pytest.fixture(scope="module")
def trace(checkpoints):
    translator = Translator.from_checkpoint(checkpoints / "tiny-de-en", device="cpu")
    trace = translator.translate(SENTENCE, max_new_tokens=STEPS)
    assert len(trace.output_tokens) == STEPS and "</s>" not in trace.output_tokens
    return trace


def rgb(image: Image.Image, xy) -> np.ndarray:
    return np.array(image.convert("RGB").getpixel((round(xy[0]), round(xy[1]))), dtype=int)


def centre(box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


@pytest.mark.parametrize("layout", anim.LAYOUTS)
def test_a_gif_has_an_opening_frame_and_one_per_generated_piece_the_first_and_last_held(trace, layout, tmp_path):
    done = export.export(trace, export.Animation(layout=layout, frame_seconds=0.5), tmp_path / "a.gif")
    assert done.notice == "" and done.frames == STEPS + 1
    assert done.path.read_bytes()[:6] == b"GIF89a"
    with Image.open(done.path) as gif:
        assert gif.size == (1280, 720) and gif.n_frames == STEPS + 1
        seconds = []
        for n in range(gif.n_frames):
            gif.seek(n)
            seconds.append(gif.info["duration"] / 1000)
        assert gif.info["loop"] == 0 and gif.convert("RGB").getpixel((0, 0)) == (255, 255, 255)  # white, exactly
    assert seconds == [export.HOLD * 0.5] + [0.5] * (STEPS - 1) + [export.HOLD * 0.5]


def _streamed_like_pillow(pictures: list[Image.Image], path: Path, seconds: float) -> bytes:
    """What Pillow's save_all writes of the pictures, all in memory (as export.write did before it streamed)."""
    frames = list(anim.paletted(pictures))
    frames[0].save(path, save_all=True, append_images=frames[1:], loop=0, optimize=False,
                   duration=[round(1000 * d) for d in export.durations(len(frames), seconds)])
    return path.read_bytes()


@pytest.mark.slow  # seconds each: every frame drawn twice
@pytest.mark.parametrize("layout", anim.LAYOUTS)
def test_a_gif_written_a_frame_at_a_time_is_the_gif_pillow_writes_of_all_its_pictures(trace, layout, tmp_path):
    """Byte for byte: every picture, one, repeated pictures (a repeat adds its time to the frame before), and all
    the same (Pillow's still)."""
    pictures = list(export.pictures(trace, export.Animation(layout=layout, frame_seconds=0.3)))
    white = Image.new("RGB", pictures[0].size, "white")
    for shown in (pictures, pictures[:1], [pictures[0], *pictures[:3], pictures[2], pictures[2]], [white, white],
                  [white, *pictures[1:3], pictures[2]]):
        done = export.write(iter(shown), tmp_path / "streamed.gif", 0.3)
        assert done.frames == len(shown)
        assert done.path.read_bytes() == _streamed_like_pillow(shown, tmp_path / "pillow.gif", 0.3)


def _peak_growth_mb(write) -> float:
    """How far this process's resident memory rose above what it was while `write()` ran, in MB (Linux)."""
    def status(key: str) -> float:
        return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith(key + ":")) / 1024

    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)  # what earlier tests freed back to the system: not reused unseen
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) from now on
    before = status("VmRSS")
    write()
    return status("VmHWM") - before


@pytest.mark.slow  # seconds each: 1280×720 animations, twice
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="reads Linux's peak resident memory")
@pytest.mark.parametrize("suffix", export.FORMATS)
def test_an_animation_s_memory_does_not_grow_with_its_frames(checkpoints, suffix, tmp_path):
    """35 frames more of 1280×720 add less than a byte a pixel of each to the peak memory of writing an animation
    (each frame is drawn, written and let go: all of them held took 4.6 MB a frame)."""
    translator = Translator.from_checkpoint(checkpoints / "tiny-de-en", device="cpu")
    long = translator.translate(SENTENCE, max_new_tokens=50)
    short = views.prefix(long, 15)
    assert views.steps(long) - views.steps(short) == 35
    animation = export.Animation()
    export.export(short, animation, tmp_path / f"warm{suffix}")  # fonts, the palette, PyAV loaded
    grown = [_peak_growth_mb(lambda: export.export(t, animation, tmp_path / f"{n}{suffix}"))
             for n, t in (("short", short), ("long", long))]
    assert grown[1] - grown[0] < 35 * 1280 * 720 / 2 ** 20, grown


@pytest.mark.slow  # seconds: a GIF read back frame by frame
def test_heatmap_frame_k_shows_exactly_the_rows_of_steps_1_to_k_in_the_gif_too(trace, tmp_path):
    """Every cell's colour, read back from the picture, is the page's colour of that weight (viridis, Plotly's
    interpolation); rows after step k are blank. The GIF's one palette keeps each within a few levels."""
    animation = export.Animation(View.of("cross", 2, "1", False), "heatmap")
    frames = export.frames(trace, animation)
    g = anim.geometry(frames, animation.size)
    pictures = [anim.draw(f, g) for f in frames]
    weights = trace.cross_attn[1, 0]  # layer 2, head 1: (steps, source pieces)
    plotly = np.array([[float(v) for v in c[4:-1].split(",")] for c in pc.sample_colorscale(
        ATTENTION_STOPS, weights.ravel().tolist())]).reshape(*weights.shape, 3)
    done = export.write(pictures, tmp_path / "h.gif", 0.8)
    with Image.open(done.path) as gif:
        for k, picture in enumerate(pictures):
            gif.seek(k)
            shown = gif.convert("RGB")
            for i in range(STEPS):
                for j in range(weights.shape[1]):
                    xy = centre(g.cell(i, j))
                    if i < k:
                        assert np.abs(rgb(picture, xy) - anim.viridis(weights[i, j])).max() == 0
                        assert np.abs(rgb(shown, xy) - anim.viridis(weights[i, j])).max() <= 6
                    else:
                        assert tuple(rgb(picture, xy)) == (255, 255, 255)
    assert np.abs(anim.viridis(weights) - plotly).max() <= 0.5  # the page's colour of each weight


def test_bar_frame_k_shows_exactly_step_ks_row_as_bar_heights(trace):
    """Each bar's height in pixels, counted in the picture, is its weight × the axis height (±1 px)."""
    animation = export.Animation(View.of("cross", 1, "mean", False), "bar")
    frames = export.frames(trace, animation)
    g = anim.geometry(frames, animation.size)
    color = np.array([int(attention_views.STEP_COLORS[CROSS][i:i + 2], 16) for i in (1, 3, 5)])
    rows = trace.cross_attn[0].mean(0)  # layer 1, mean of heads
    for k, frame in enumerate(frames):
        picture = np.asarray(anim.draw(frame, g), dtype=int)
        for j in range(rows.shape[1]):
            x = round(centre(g.bar(j, 1.0))[0])
            height = int((np.abs(picture[:, x] - color).max(-1) == 0).sum())
            expected = 0 if k == 0 else rows[k - 1, j] * g.cell_h
            assert abs(height - expected) <= 1, (k, j)


def test_frames_carry_the_page_s_own_arrays_with_words_marker_and_special_tokens(trace):
    """The bar row is the step panel's row, the heatmap's last frame the large view's matrix, with merging, ▁ and
    special tokens applied as on the page."""
    view = View.of("decoder", 2, "mean", True, plain=True, hide=True)
    bars = export.frames(trace, export.Animation(view, "bar"))
    heat = export.frames(trace, export.Animation(view, "heatmap"))
    for k in range(1, STEPS + 1):
        row = attention_views.step_row(trace, view.fit(2, 2, STEPS), DECODER, k - 1)
        n = len(row.keys)
        assert np.array_equal(bars[k].weights[0, :n], row.weights) and bars[k].keys[:n] == row.keys
        assert bars[k].output == viz.plain_labels(trace.output_tokens[:k])
    large = attention_views.matrix(trace, view.fit(2, 2, STEPS))
    assert np.array_equal(heat[-1].weights, large.weights) and heat[-1].rows == large.queries
    keys = [k for f in bars + heat for k in f.keys if k is not None]
    assert keys and not any("▁" in k or k in ("<s>", "</s>") for k in keys)
    assert all("▁" not in read + produced for f in heat for read, produced in f.rows[:f.filled])
    assert heat[0].filled == 0 and all(r is None for r in heat[0].rows)  # nothing decoded before step 1
    # Step 1 reads only <s>: hidden, it leaves the row no key (the viewer says so: tests/js/figures.test.mjs).
    assert heat[1].filled == 1 and heat[1].hidden[0].all()


def test_mp4_is_h264_with_the_held_frames_repeated(trace, tmp_path):
    av = pytest.importorskip("av")
    done = export.export(trace, export.Animation(frame_seconds=0.5), tmp_path / "a.mp4")
    assert done.path == tmp_path / "a.mp4" and done.notice == ""
    assert done.path.read_bytes()[4:8] == b"ftyp"
    with av.open(str(done.path)) as video:
        stream = video.streams.video[0]
        assert stream.codec_context.name == "h264" and (stream.width, stream.height) == (1280, 720)
        frames = sum(1 for _ in video.decode(video=0))
        assert video.duration / 1e6 == pytest.approx(frames * 0.5, abs=0.05)
    assert frames == STEPS + 1 + 2 * (export.HOLD - 1)


def test_without_pyav_an_mp4_becomes_png_frames_in_a_zip_with_a_clear_notice(trace, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # import av raises ImportError
    done = export.export(trace, export.Animation(size=anim.SIZES["1920x1080"]), tmp_path / "a.mp4")
    assert done.path == tmp_path / "a.zip" and not (tmp_path / "a.mp4").exists()
    assert "PyAV" in done.notice and "pip install av" in done.notice and "a.zip" in done.notice
    with zipfile.ZipFile(done.path) as archive:
        names = archive.namelist()
        assert names == [f"frame-{n:03d}.png" for n in range(STEPS + 1)]
        with archive.open(names[-1]) as png, Image.open(png) as image:
            assert image.format == "PNG" and image.size == (1920, 1080)


def test_what_cannot_be_animated_says_why(trace, tmp_path):
    with pytest.raises(ValueError, match="heatmap layout"):
        export.frames(trace, export.Animation(View.of("encoder", 1, "mean", False), "bar"))
    with pytest.raises(ValueError, match="0.1 to 10"):
        export.frames(trace, export.Animation(frame_seconds=0))
    with pytest.raises(ValueError, match=".gif, .mp4, .zip"):
        export.write([Image.new("RGB", (4, 4))], tmp_path / "a.png", 0.8)
    encoder = export.frames(trace, export.Animation(View.of("encoder", 1, "mean", False), "heatmap"))
    assert all(f.filled == len(trace.source_tokens) for f in encoder)  # computed once, before decoding
    assert [f.output for f in encoder[:3]] == [[], trace.output_tokens[:1], trace.output_tokens[:2]]


def test_the_file_is_named_after_what_it_shows():
    animation = export.Animation(View.of("cross", 3, "2", True, hide=True), "heatmap")
    assert export.file_name("de-en", animation, ".mp4") == \
        "de-en_cross-attention_layer3_head2_words_no-special_decoding-heatmap.mp4"
    assert export.file_name("en-de", export.Animation(View.of("decoder", 1, "mean", False, display="lines"))) == \
        "en-de_decoder-masked-self-attention_layer1_mean-of-heads_decoding-bar.gif"


def test_the_shipped_font_draws_umlauts_the_marker_and_arrows():
    """Pillow's built-in font has none of them: each would be the empty box (.notdef)."""
    font = ImageFont.truetype(str(anim.FONT), 20)
    box = bytes(font.getmask("\ue000"))  # a private-use code point: no font has it
    for char in "üÜßé▁→▸·␣∅…":
        assert bytes(font.getmask(char)) != box, char
    assert (anim.FONT.parent / "LICENSE").read_text().count("Bitstream") > 3


def test_labels_stay_20_px_apart_on_a_long_translation():
    """Forty rows and keys at 720p: labels are 20 px type, and those drawn are at least 20 px apart."""
    n = 40
    frame = anim.Frame("t", "step 1 of 40", "heatmap", np.zeros((n, n)), np.zeros((n, n), dtype=bool),
                       [("▁a", "▁b")] * n, ["▁Verspätung"] * n, filled=n)
    g = anim.geometry([frame], (1280, 720))
    assert g.key_rotated and g.cell_h * g.row_stride >= 20 and g.cell_w * g.key_stride >= 20
    assert anim.SMALL_PX >= 20 and g.row_stride == 2


@pytest.mark.slow  # every format written by the command
def test_the_command_writes_the_animation_and_refuses_bad_options(checkpoints, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANATOMY_CHECKPOINT_DIR", str(checkpoints))
    monkeypatch.delenv("ANATOMY_HUB_MODELS", raising=False)
    out = tmp_path / "decoding.gif"
    assert export.main(["animate", SENTENCE, "--direction", "de-en", "--out", str(out), "--layout", "heatmap",
                        "--layer", "1", "--head", "2", "--frame-seconds", "0.5"]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"{out}: ") and " frames of " in printed.out
    with Image.open(out) as gif:
        assert gif.n_frames >= 2 and gif.info["duration"] == 1500
    for args, error in ((["--direction", "xx-yy"], "Unknown direction 'xx-yy'"),
                        (["--layer", "3", "--head", "all"], "layer must be from 1 to 2, got 3. head must be "
                                                            '"mean" or an integer from 1 to 2, got \'all\'.'),
                        (["--kind", "encoder"], "choose the heatmap layout."),
                        (["--out", str(tmp_path / "a.png")], "--out must end in .gif, .mp4, .zip")):
        argv = ["animate", SENTENCE, "--direction", "de-en", "--out", str(out), *args]
        assert export.main(argv) == 2
        assert error in capsys.readouterr().err
    with pytest.raises(SystemExit):
        export.main(["html", SENTENCE])  # it needs --direction and --out too (tests/test_offline.py)


@pytest.mark.slow
def test_the_command_as_typed_on_the_shipped_model(tmp_path):
    """`python -m anatomy.export animate ...` from the repository root, with the shipped de→en model: a GIF of
    720p frames within the size budget."""
    out = tmp_path / "decoding.gif"
    env = {k: v for k, v in os.environ.items() if k not in ("ANATOMY_CHECKPOINT_DIR", "ANATOMY_HUB_MODELS")}
    done = subprocess.run([sys.executable, "-m", "anatomy.export", "animate", "Ich habe gestern ein Buch gekauft.",
                           "--direction", "de-en", "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with Image.open(out) as gif:
        assert gif.size == (1280, 720) and gif.n_frames >= 3
    assert out.stat().st_size <= 8e6


def test_export_animation_on_the_page_animates_the_shown_translation_and_view(tiny, monkeypatch):
    """The control reads the shown Run and the view controls, names the file as a figure export is named, and
    draws the Run's trace without the model."""
    p = tiny.page
    run = run_of(tiny, max_new=5)
    monkeypatch.setattr(Translator, "translate", lambda *args, **kwargs: pytest.fail("the model ran"))
    shown = {"kind": "decoder", "layer": 1, "head": "2", "merge": False, "plain": True, "hide": False,
             "animation": {"layout": "heatmap", "size": "1920x1080", "seconds": 0.5, "suffix": ".gif"}}

    def asked(**changes) -> dict:  # the view and Export animation's settings, as the viewer sends them
        return {p.view: json.dumps({**shown, **changes, "animation": {**shown["animation"],
                                                                        **changes.get("animation", {})}})}

    values = {p.run: run, **asked()}
    path = Path(tiny.animate_page({**values, **asked(ask="animation")})[p.animation_file]["value"])
    assert path.name == "de-en_decoder-masked-self-attention_layer1_head2_decoding-heatmap.gif"
    with Image.open(path) as gif:
        assert gif.size == (1920, 1080) and gif.n_frames == len(run.trace.output_tokens) + 1
        assert gif.info["duration"] == 1500
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.warns(UserWarning, match="PyAV"):
        zipped = Path(tiny.animate_page({**values, **asked(ask="animation", animation={"suffix": ".mp4"})})
                      [p.animation_file]["value"])
    assert zipped.suffix == ".zip" and zipped.stem == path.stem
    for refused, message in (({p.run: None}, "Translate a sentence first"),
                             (asked(kind="encoder", animation={"layout": "bar"}), "choose the heatmap layout")):
        with pytest.raises(gr.Error, match=message):
            tiny.animate_page({**values, **refused})


@pytest.mark.slow  # seconds: an animation for each bad argument
def test_the_animate_endpoint_answers_every_bad_argument_with_a_notice(tiny):
    fn = next(f for f in tiny.demo.fns.values() if f.api_name == "animate")
    names = list(inspect.signature(tiny.api_animate).parameters)
    # the client's keyword arguments: the handler's own (the endpoint has no components of its own)
    assert [p["parameter_name"] for p in tiny.demo.get_api_info()["named_endpoints"]["/animate"]["parameters"]] \
        == names

    def call(**given):
        return asyncio.run(tiny.demo.process_api(fn, [given.get(n) for n in names]))["data"]

    made, notice = call(text=SENTENCE, direction="de-en", layout="heatmap", head=2, frame_seconds=1)
    assert Path(made["path"]).name == "de-en_cross-attention_layer2_head2_decoding-heatmap.gif"
    assert made["orig_name"] == Path(made["path"]).name
    for bad, said in ((dict(direction="fr-en"), "Unknown direction 'fr-en'"),
                      (dict(kind="self"), "kind must be one of cross, encoder, decoder, got 'self'."),
                      (dict(layer=2.5), "layer must be an integer from 1 to 2, got 2.5."),
                      (dict(head="2"), 'head must be "mean" or an integer from 1 to 2, got \'2\'.'),
                      (dict(frame_seconds=[1]), "frame_seconds must be a number from 0.1 to 10, got [1]."),
                      (dict(hide_marker="yes"), "hide_marker must be true or false, got 'yes'."),
                      (dict(file_format="webm"), "file_format must be one of gif, mp4, zip, got 'webm'.")):
        made, notice = call(**{"text": SENTENCE, "direction": "de-en", **bad})
        assert made is None and notice.startswith(said)


@pytest.mark.slow
def test_the_animate_endpoint_sends_the_file_to_a_client(served, tmp_path):
    from gradio_client import Client

    client = Client(served.url, verbose=False, download_files=str(tmp_path))
    path, notice = client.predict(text=SENTENCE, direction="de-en", file_format="mp4", api_name="/animate")
    assert path is not None, notice
    assert Path(path).name == "de-en_cross-attention_layer2_mean-of-heads_decoding-bar." + (
        "mp4" if importlib.util.find_spec("av") else "zip")
    assert Path(path).read_bytes()[4:8] == b"ftyp" or "PyAV" in notice


def test_the_font_travels_with_the_space():
    from transformer import hub

    shipped = [path for path, _ in hub.plan(ROOT, hub.SPACE_PATTERNS)]
    assert {"assets/fonts/DejaVuSans.ttf", "assets/fonts/LICENSE", "anatomy/export.py",
            "viz/animation.py"} <= set(shipped)


@pytest.mark.parametrize("layout", anim.LAYOUTS)
def test_translations_with_nothing_to_show_still_animate(trace, layout):
    """No step at all, or only </s> with special tokens hidden: the frames are drawn, blank where nothing is."""
    only_end = dataclasses.replace(views.prefix(trace, 1), output_tokens=["</s>"])
    for shown, n in ((views.prefix(trace, 0), 1), (only_end, 2)):
        animation = export.Animation(View.of("cross", 1, "mean", False, hide=True), layout)
        pictures = list(export.pictures(shown, animation))
        assert len(pictures) == n and pictures[-1].size == (1280, 720)


@needs_chromium
def test_export_animation_on_the_page_downloads_the_shown_translation(browser, url, shipped):
    """In Chromium: open Export animation (inside the export accordion), choose the heatmap, make it, download it
    by its name."""
    from tests.test_browser_presenter import open_page

    key = shipped.anatomy.registry.default_key
    L = shipped.anatomy.registry.get(None).config.n_decoder_layers
    page = open_page(browser, url, key, 1600, 1000)
    page.get_by_text("Export a figure or animation").click()
    page.get_by_text("Export animation").click()
    page.select_option("#animation-layout", "heatmap")
    page.locator("#animation-make").click()
    link = page.locator("#animation-file a[download]").first
    link.wait_for()
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == f"{key}_cross-attention_layer{L}_mean-of-heads_decoding-heatmap.gif"
    with Image.open(download.value.path()) as gif:
        assert gif.size == (1280, 720) and gif.n_frames >= 3
    assert not page.errors, page.errors
    page.context.close()
