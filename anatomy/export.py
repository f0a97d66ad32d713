"""Exporting what the app shows of a translation as files: `python -m anatomy.export {animate,html} TEXT --direction
KEY --out FILE`.

animate: decoding as an animation, one opening frame and one frame per generated piece, each with the source, the
translation so far (the newest piece highlighted) and that step's attention: its row as bars over the keys (as the
step panel draws it) or the heatmap filling row by row (as slow motion draws it). The frames are drawn from the
trace's own arrays (the model computes nothing more) by viz.animation, with the page's title, labels, colour
scale, words, ▁ and special-token handling. The file's suffix picks the format: .gif (Pillow, looping), .mp4 (H.264
through PyAV, when it is installed), .zip (the frames as PNGs; also what .mp4 gives without PyAV, with a notice).

html: the whole translation as one HTML page that opens from disk with no network (anatomy.offline): the translation
and its steps, every attention kind, layer and head, head statistics, predictions, positional encoding, architecture
and model card, drawn in the browser by the Plotly.js inside it; with `--compare TEXT`, a second sentence translated
by the same model and drawn beside it (docs/app.md, Compare with…).
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import os
import sys
import time
import zipfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import torch
from PIL import GifImagePlugin, Image, ImageChops

import viz
from transformer import Trace
from transformer.config import ModelConfig
from transformer.kinds import by_name
from viz import animation as anim

from . import attention_views, engine, offline, views
from .inputs import DISPLAYS, MEAN_HEAD, PAGE_KINDS, Request, View, api_int, api_request, to_float
from .registry import ModelRegistry
from .run import Pair

HOLD = 3  # the opening and the last frame stay this many frame durations
FORMATS = (".gif", ".mp4", ".zip")
MIN_SECONDS, MAX_SECONDS = 0.1, 10.0  # a frame's duration
NO_MP4 = ("MP4 needs PyAV with its H.264 encoder (`pip install av`: its wheels bundle FFmpeg), which this machine "
          "lacks: the frames are in {zip} as PNGs instead.")


@dataclass(frozen=True)
class Animation:
    """What an animation shows and how: the attention view (kind, layer, head, words, ▁, special tokens; layer
    and head are clamped to the trace), the layout, the picture size and each frame's duration."""

    view: View = field(default_factory=View)
    layout: str = anim.LAYOUTS[0]
    size: tuple[int, int] = anim.SIZES["1280x720"]
    frame_seconds: float = 0.8

    @classmethod
    def of(cls, view: View, layout, size, frame_seconds) -> Animation:
        """From the page's controls: anything unreadable becomes the default."""
        seconds = to_float(frame_seconds, MIN_SECONDS, MAX_SECONDS, cls.frame_seconds)
        return cls(view, layout if layout in anim.LAYOUTS else cls.layout,
                   anim.SIZES.get(size, cls.size) if isinstance(size, str) else cls.size, seconds)

    def check(self) -> None:
        """ValueError, saying why, for what cannot be animated."""
        if self.layout not in anim.LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}; expected one of {', '.join(anim.LAYOUTS)}")
        if self.size not in anim.SIZES.values():
            raise ValueError(f"unknown size {self.size}; expected one of {', '.join(anim.SIZES)}")
        if not MIN_SECONDS <= self.frame_seconds <= MAX_SECONDS:
            raise ValueError(f"a frame lasts {MIN_SECONDS:g} to {MAX_SECONDS:g} s, not {self.frame_seconds:g}")
        if self.layout == "bar" and not attention_views.stepped(by_name(self.view.kind)):
            raise ValueError(f"{by_name(self.view.kind).label} is computed once, before decoding: it has no row per "
                             "step to draw as bars; choose the heatmap layout")


@dataclass(frozen=True)
class Exported:
    """A written animation."""

    path: Path
    frames: int  # distinct pictures: the opening one and one per generated piece
    notice: str = ""  # why the file is not in the format asked for; empty when it is


def frames(trace: Trace, animation: Animation) -> list[anim.Frame]:
    """The opening frame, then one frame per decoding step (generated piece)."""
    animation.check()
    view = dataclasses.replace(views.fitted(animation.view, trace), step=None)
    return (_bar_frames if animation.layout == "bar" else _heatmap_frames)(trace, view)


def _progress(k: int, T: int) -> str:
    return f"step {k} of {T}" if k else f"before step 1 of {T}"


def _output(trace: Trace, view: View, k: int) -> list[str]:
    """The pieces produced by step k, as the page's chips show them."""
    produced = list(trace.output_tokens[:k])
    return viz.plain_labels(produced) if view.plain else produced


def _source(trace: Trace, view: View) -> list[str]:
    return viz.plain_labels(list(trace.source_tokens)) if view.plain else list(trace.source_tokens)


def _bar_frames(trace: Trace, view: View) -> list[anim.Frame]:
    """Each step as the step panel draws it: its row over the keys it may see. The keys are the last step's, so
    that they stand still; those not read yet are left blank."""
    kind = by_name(view.kind)
    T = views.steps(trace)
    last = attention_views.step_row(trace, view, kind, T - 1) if T else None
    caption = last.caption if last else attention_views.pick(trace.attention(kind.name).weights, view.layer,
                                                             view.head)[1]
    n_keys = len(last.keys) if last else 0
    source = None if kind.keys == "source" else _source(trace, view)
    out = []
    for k in range(T + 1):
        weights, hidden = np.zeros((1, n_keys), dtype=np.float32), np.ones((1, n_keys), dtype=bool)
        keys = list(last.keys) if last and kind.keys == "source" else [None] * n_keys
        if k:
            row = attention_views.step_row(trace, view, kind, k - 1)
            n = len(row.keys)
            weights[0, :n], hidden[0, :n], keys[:n] = row.weights, False, row.keys
        out.append(anim.Frame(attention_views.view_title(view, caption), _progress(k, T), "bar", weights, hidden,
                              [None], keys, filled=1, source=source, output=_output(trace, view, k), newest=k > 0,
                              bar_color=attention_views.STEP_COLORS[kind]))
    return out


def _heatmap_frames(trace: Trace, view: View) -> list[anim.Frame]:
    """The large view's heatmap after each step, as slow motion draws it, in the whole translation's rows and
    keys: those not produced or read yet are left blank. Encoder self-attention, computed before decoding, is
    whole in every frame, beside the translation so far."""
    kind = by_name(view.kind)
    stepped = attention_views.stepped(kind)
    T = views.steps(trace)
    final = attention_views.matrix(trace, view)
    R, C = final.weights.shape
    source = None if kind.keys == "source" or kind.queries == "source" else _source(trace, view)
    out = []
    for k in range(T + 1):
        weights, hidden = np.zeros((R, C), dtype=np.float32), np.zeros((R, C), dtype=bool)
        rows, keys = [None] * R, list(final.keys) if kind.keys == "source" else [None] * C
        r, current = 0, None
        if k or not stepped:
            shown = attention_views.matrix(views.prefix(trace, k), view) if stepped else final
            r, c = shown.weights.shape
            weights[:r, :c] = shown.weights
            if shown.hidden is not None:
                hidden[:r, :c] = shown.hidden
            hidden[:r, c:] = True  # the pieces not read yet: the causal mask hides them from every row so far
            rows[:r], keys[:c] = shown.queries, shown.keys
            if stepped and shown.rows and shown.rows[-1] == k - 1:
                current = r - 1
        out.append(anim.Frame(attention_views.view_title(view, final.caption), _progress(k, T), "heatmap", weights,
                              hidden, rows, keys, filled=r, current=current, source=source,
                              output=None if stepped else _output(trace, view, k), newest=k > 0))
    return out


def pictures(trace: Trace, animation: Animation) -> Iterator[Image.Image]:
    """Every frame as an RGB picture, all in one layout, each drawn when the writer takes it: a 1920×1080 picture
    is 6 MB, an animation up to one per piece (257)."""
    shown = frames(trace, animation)
    geometry = anim.geometry(shown, animation.size)
    return (anim.draw(frame, geometry) for frame in shown)


def durations(n: int, seconds: float) -> list[float]:
    """Each of n frames' seconds: the first and the last held HOLD times as long."""
    out = [seconds] * n
    if n:
        out[0] = out[-1] = HOLD * seconds
    return out


def write(images: Iterable[Image.Image], path: Path, frame_seconds: float) -> Exported:
    """The pictures as `path`'s format (FORMATS), each written as it comes and let go (the writer holds one or two);
    an MP4 without PyAV as PNGs in a ZIP beside it, with a notice."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"unknown format {path.suffix or path.name!r}; expected one of {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        return Exported(path, _gif(images, path, frame_seconds), "")
    if suffix == ".mp4" and _h264():
        return Exported(path, _mp4(images, path, frame_seconds), "")
    zipped = path.with_suffix(".zip")
    return Exported(zipped, _zip(images, zipped), "" if suffix == ".zip" else NO_MP4.format(zip=zipped.name))


@dataclass
class _Held:
    """A GIF frame not written yet: the next may be the same picture, which adds its time to this one's."""

    picture: Image.Image  # what changed since the last frame (the whole first picture)
    offset: tuple[int, int]
    ms: int


def _gif(images: Iterable[Image.Image], path: Path, seconds: float) -> int:
    """The pictures as a looping GIF, as Pillow's save_all writes them (the same bytes: each frame stored as the box
    that changed since the last, a frame the same as the last adds its time to it), but written one frame behind
    the pictures instead of after all of them, which Pillow holds. Returns the pictures written."""
    # optimize=False: Pillow's palette optimisation takes ~40 ms a frame in Python for a GIF ~4× smaller, which
    # is small already (the frames share one palette, and each is stored as its difference from the last).
    step, held_ms = round(1000 * seconds), round(1000 * HOLD * seconds)
    n, first, last, held = 0, None, None, None
    with open(path, "wb") as out:
        for picture in anim.paletted(images):
            ms = held_ms if n == 0 else step
            n += 1
            if last is None:
                first = held = _Held(picture, (0, 0), ms)
            elif (box := ImageChops.subtract_modulo(picture, last).getbbox(alpha_only=False)) is None:
                held.ms += ms
            else:
                if held is first:
                    header, _ = GifImagePlugin.getheader(first.picture, None, {"loop": 0, "duration": first.ms})
                    out.writelines(header)
                _frame(out, held, held is not first)
                held = _Held(picture.crop(box), box[:2], ms)
            last = picture
        if n > 1:
            held.ms += held_ms - step  # the last picture is held as long as the first
        if held is first:  # one picture (or all the same): Pillow writes a GIF of one frame as a still, interlaced
            out.close()
            first.picture.save(path, "GIF", loop=0, optimize=False, duration=first.ms)
            return n
        _frame(out, held, True)
        out.write(b";")
    return n


def _frame(out, held: _Held, delta: bool) -> None:
    """One GIF frame: its time, place and pixels; a delta has its own colour table, as Pillow writes it."""
    out.writelines(GifImagePlugin.getdata(held.picture, held.offset, duration=held.ms, loop=0, optimize=False,
                                          **({"include_color_table": True} if delta else {})))


def _zip(images: Iterable[Image.Image], path: Path) -> int:
    n = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:  # PNGs are compressed already
        for n, image in enumerate(images, 1):
            data = io.BytesIO()
            image.save(data, "PNG", optimize=False)
            archive.writestr(f"frame-{n - 1:03d}.png", data.getvalue())
    return n


def _h264() -> bool:
    """Whether PyAV and its H.264 encoder are installed."""
    try:
        import av
    except ImportError:
        return False
    return "libx264" in av.codecs_available


def _mp4(images: Iterable[Image.Image], path: Path, seconds: float) -> int:
    """H.264 through PyAV, at a constant rate of one frame per `seconds` (what every player and slide program
    plays), the first and last pictures repeated to be held: H.264 stores a repeat in a few bytes. Returns the
    pictures written."""
    import av

    n, pts, last, stream = 0, 0, None, None
    with av.open(str(path), "w", format="mp4", options={"movflags": "+faststart"}) as container:
        def encode(image: Image.Image, times: int) -> None:
            nonlocal pts
            for _ in range(times):
                frame = av.VideoFrame.from_image(image)
                frame.pts = pts
                pts += 1
                container.mux(stream.encode(frame))

        for image in images:
            if stream is None:
                stream = container.add_stream("libx264", rate=1 / Fraction(str(seconds)))
                stream.width, stream.height = image.size
                stream.pix_fmt = "yuv420p"
                stream.options = {"crf": "18", "preset": "veryfast"}
            encode(image, HOLD if n == 0 else 1)
            n, last = n + 1, image
        if n > 1:
            encode(last, HOLD - 1)
        if stream is not None:
            container.mux(stream.encode())
    return n


def api_animation(kind, layer, head, layout, size, frame_seconds, merge_words, hide_special, hide_marker,
                  config: ModelConfig) -> tuple[Animation | None, str]:
    """An animation's arguments from the API or the command (any JSON values; None: the default) as an Animation
    for a model of this shape (the layer within its kind's stack; null: the last), or None and the notice that says
    why not."""
    kinds = [k.name for k in PAGE_KINDS]
    flags = {"merge_words": merge_words, "hide_special": hide_special, "hide_marker": hide_marker}
    problems = [f"{name} must be true or false, got {value!r}." for name, value in flags.items()
                if value is not None and not isinstance(value, bool)]
    kind = View().kind if kind is None else kind
    if kind not in kinds:
        problems.append(f"kind must be one of {', '.join(kinds)}, got {kind!r}.")
    if kind in kinds:
        layers = config.n_layers(kind)
        number, problem = api_int("layer", layer, layers) if layer is not None else (layers, "")
        problems += [problem] if problem else []
    head = MEAN_HEAD if head is None else head
    if head != MEAN_HEAD:
        head, problem = api_int("head", head, config.n_heads)
        problems += [problem.replace("an integer", f'"{MEAN_HEAD}" or an integer')] if problem else []
    layout = anim.LAYOUTS[0] if layout is None else layout
    if layout not in anim.LAYOUTS:
        problems.append(f"layout must be one of {', '.join(anim.LAYOUTS)}, got {layout!r}.")
    size = "1280x720" if size is None else size
    if size not in anim.SIZES:
        problems.append(f"size must be one of {', '.join(anim.SIZES)}, got {size!r}.")
    seconds = Animation.frame_seconds if frame_seconds is None else frame_seconds
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not \
            MIN_SECONDS <= seconds <= MAX_SECONDS:
        problems.append(f"frame_seconds must be a number from {MIN_SECONDS:g} to {MAX_SECONDS:g}, got {seconds!r}.")
    if problems:
        return None, " ".join(problems)
    view = View.of(kind, number, head, bool(merge_words), plain=bool(hide_marker), hide=bool(hide_special))
    animation = Animation(view, layout, anim.SIZES[size], float(seconds))
    try:
        animation.check()
    except ValueError as err:
        return None, f"{str(err)[0].upper()}{str(err)[1:]}."
    return animation, ""


def file_name(key: str, animation: Animation, suffix: str = ".gif") -> str:
    """Named after what it shows, like the page's figure exports: `de-en_cross-attention_layer3_mean-of-heads_
    decoding-bar.gif`."""
    view = dataclasses.replace(animation.view, display=DISPLAYS[0])
    return f"{attention_views.export_name(key, view)}_decoding-{animation.layout}{suffix}"


def export(trace: Trace, animation: Animation, path: Path) -> Exported:
    """The animation of a trace, written to `path` (its suffix picks the format)."""
    return write(pictures(trace, animation), path, animation.frame_seconds)


# ---- the command ----

DIRECTION_HELP = ("the app's direction key: de-en, en-de (the default models), or another model's key "
                  "(multi30k-de-en); decoded with the model's own settings")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m anatomy.export",
                                description="Export what the app shows of a translation, as a file.")
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = commands.add_parser("animate", help="decoding as an animated GIF, an MP4 or PNG frames",
                            description=__doc__.split("\n\n")[1].replace("\n", " "))
    a.add_argument("text", help="the sentence to translate")
    a.add_argument("--direction", required=True, help=DIRECTION_HELP)
    a.add_argument("--out", required=True, type=Path, help="the file: .gif, .mp4 (H.264) or .zip (PNG frames)")
    a.add_argument("--kind", choices=[k.name for k in PAGE_KINDS], default=View().kind,
                   help="the attention (default: %(default)s)")
    a.add_argument("--layer", type=int, help="from 1 (default: the last)")
    a.add_argument("--head", default=MEAN_HEAD, help="from 1, or %(default)s (the mean of the heads, the default)")
    a.add_argument("--layout", choices=anim.LAYOUTS, default=anim.LAYOUTS[0],
                   help="this step's row as bars, or the heatmap filling row by row (default: %(default)s)")
    a.add_argument("--size", choices=list(anim.SIZES), default="1280x720", help="default: %(default)s")
    a.add_argument("--frame-seconds", type=float, default=Animation.frame_seconds,
                   help="each frame's duration; the first and last are held %s× as long (default: %%(default)s)"
                        % HOLD)
    a.add_argument("--merge-words", action="store_true", help="as the page's Merge pieces into words")
    a.add_argument("--hide-special", action="store_true", help="as the page's Hide special tokens")
    a.add_argument("--hide-marker", action="store_true", help="as the page's Hide ▁ marker")
    a.set_defaults(run=animate)
    h = commands.add_parser("html", help="the translation as one HTML page that opens offline",
                            description=__doc__.split("\n\n")[2].replace("\n", " "))
    h.add_argument("text", help="the sentence to translate")
    h.add_argument("--direction", required=True, help=DIRECTION_HELP)
    h.add_argument("--out", required=True, type=Path, help=f"the file: {offline.SUFFIX}")
    h.add_argument("--compare", metavar="TEXT", default="",
                   help="a second sentence, translated by the same model and drawn beside the first (Compare with…)")
    h.set_defaults(run=html)
    return p


def animate(args: argparse.Namespace) -> int:
    """The animate command: translate, draw, write; the file and the time taken on stdout, notices on stderr."""
    start = time.perf_counter()
    if args.out.suffix.lower() not in FORMATS:
        return _fail(f"--out must end in {', '.join(FORMATS)}, not {args.out.name!r}")
    registry, request, problem = _request(args)
    if request is None:
        return _fail(problem)
    entry = registry.get(request.key)
    head = int(args.head) if args.head.isdigit() else args.head
    animation, problem = api_animation(args.kind, args.layer, head, args.layout, args.size, args.frame_seconds,
                                       args.merge_words, args.hide_special, args.hide_marker, entry.config)
    if animation is None:
        return _fail(problem)
    trace, _ = _translate(registry, request)
    exported = export(trace, animation, args.out)
    if exported.notice:
        print(f"note: {exported.notice}", file=sys.stderr)
    size = exported.path.stat().st_size
    print(f"{exported.path}: {exported.frames} frames of {trace.text!r}, {args.size}, {size / 1e6:.2f} MB, "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def html(args: argparse.Namespace) -> int:
    """The html command: translate, write the page; the file, its size and the time taken on stdout, notices on
    stderr (and in the page)."""
    start = time.perf_counter()
    if args.out.suffix.lower() != offline.SUFFIX:
        return _fail(f"--out must end in {offline.SUFFIX}, not {args.out.name!r}")
    registry, request, problem = _request(args)
    if request is None:
        return _fail(problem)
    pair = None
    if args.compare:
        second, problem = api_request(args.compare, request.key, None, None, {request.key: request.decoding})
        if second is None:
            return _fail(f"--compare: {problem}")
        pair = Pair(second.text, _translate(registry, second)[0])
    trace, notices = _translate(registry, request)
    written = offline.write(trace, registry.get(request.key), request.text, notices, args.out, pair=pair)
    print(f"{written.path}: {trace.text!r}, {len(trace.source_tokens)} source pieces → {views.steps(trace)} output "
          f"pieces" + (f", beside {pair.trace.text!r}" if pair else "") +
          f", {written.size / 1e6:.2f} MB, in {time.perf_counter() - start:.1f} s")
    return 0


def _request(args: argparse.Namespace) -> tuple[ModelRegistry, Request | None, str]:
    """The models, and the command's text and direction as a request decoded with the model's own settings (or None
    and why not, as the API says it)."""
    # One sentence through a small model is a chain of tiny matmuls: one thread is fastest (the app's default).
    torch.set_num_threads(max(1, int(os.environ.get("ANATOMY_THREADS") or 1)))
    registry = ModelRegistry.discover()
    request, problem = api_request(args.text, args.direction, None, None,
                                   {key: e.decoding for key, e in registry.entries.items()},
                                   {s.name: s.reason for s in registry.skipped})
    return registry, request, problem


def _translate(registry: ModelRegistry, request: Request) -> tuple[Trace, list[str]]:
    """The request through its model, and the run's notices, each printed on stderr."""
    translator, notice = registry.translator(request.key, request.device)
    trace = engine.translate(translator, request)
    notices = views.run_notices(registry.get(request.key), trace, [*request.notices, *([notice] if notice else [])])
    for line in notices:
        print(f"note: {line}", file=sys.stderr)
    return trace, notices


def _fail(message: str) -> int:
    print(f"python -m anatomy.export: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
