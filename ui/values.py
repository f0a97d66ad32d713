"""What the page's events read, as typed values: the tabs by name, the translation settings, and Inputs.

Gradio passes an event's inputs, given as a set of components, as one dict keyed by component; Inputs.of turns
that dict into one frozen Inputs, once, at the top of each handler.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Mapping

from anatomy.inputs import Link, View
from anatomy.layout import Tab
from anatomy.run import Explained, Judged, Norms, Run, StopSignal, Twin, Vectors
from anatomy.tour import Tour

if TYPE_CHECKING:
    from .layout import Page


# What the viewer may ask the server (Viewed.ask), by the button that asks it: model (Handlers.ask_model, the model's
# slot), draw (Handlers.ask_draw) or export (Handlers.animate_page, a few at once: ui/wiring.py exporting); the page
# offers them to app.js (anatomy/layout.py explorer_html).
ASKS = {"model": ("link", "walk", "norms", "make", "contrast", "toggle", "branch", "candidate"),
        "draw": ("address", "tab", "share", "own"), "export": ("animation",), "example": ("example",)}
MAX_WORD = 200  # a typed word a branch continues with, in characters (anatomy/viewer/tabs.html #branch-word)


@dataclass(frozen=True)
class Branching:
    """A branch the viewer asks for: the shown translation continued from `step` (from 0) with the next piece
    `piece` (a click on one of the step's pieces), or the pieces of a typed `word`."""

    step: int
    piece: str = ""
    word: str = ""

    @classmethod
    def of(cls, given) -> Branching | None:
        """The viewer's JSON of it; None for anything unreadable."""
        if not isinstance(given, dict):
            return None
        step, piece, word = given.get("step"), given.get("piece"), given.get("word")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            return None
        return cls(step, piece if isinstance(piece, str) else "", word[:MAX_WORD] if isinstance(word, str) else "")


@dataclass(frozen=True)
class PageSettings:
    """The controls a translation is asked with, as the page holds them: anatomy.inputs.page_request's arguments,
    unchecked (page_request checks them, and makes a value left out its default)."""

    key: str | None = None  # the Direction dropdown: a model key
    text: str = ""
    beam: float | None = None
    max_new: float | None = None  # 0: automatic
    device: str = "auto"
    top_k: float | None = None
    length_penalty: float | None = None
    slow: float | None = None  # seconds per piece of a slow-motion replay
    heads_off: tuple[str, ...] = ()  # the heads-off checkboxes: HeadMask link items, unchecked
    compare: str = ""  # Compare with…: a second sentence drawn beside the first


@dataclass(frozen=True)
class AnimationSettings:
    """The Export animation controls, as the page holds them, unchecked (anatomy.export.Animation.of checks them)."""

    layout: str | None = None
    size: str | None = None
    seconds: float | None = None
    suffix: str = ".gif"  # the file's format


VIEW_FIELDS = tuple(f.name for f in fields(View))


@dataclass(frozen=True)
class Viewed:
    """What the viewer says with an event (JSON: anatomy/viewer/controls.js's view, the open tab, Why this word's
    comparison word and Export animation's settings), read as a link's values are: anything unreadable becomes the
    default (the animation's, when it is made: anatomy.export.Animation.of)."""

    view: View = View()
    tab: Tab = Tab.HEADS
    foil: str = ""
    animation: AnimationSettings = AnimationSettings()
    ask: str = ""  # what an event the viewer asks with is for (Handlers.ask_model, ask_draw)
    clicked: str = ""  # the head a click on a thumbnail or map cell names (HeadMask link item)
    branch: Branching | None = None  # the branch asked for (ask "branch")
    candidate: int = 0  # the beam candidate clicked (ask "candidate"), from 0
    example: int | None = None  # the example clicked (ask "example"): its index in the page's list

    @classmethod
    def of(cls, text) -> Viewed:
        try:
            given = json.loads(text) if text else {}
        except (TypeError, ValueError):
            given = {}
        given = given if isinstance(given, dict) else {}
        foil, animation = given.get("foil"), given.get("animation")
        animation = animation if isinstance(animation, dict) else {}
        text = {name: value if isinstance(value := given.get(name), str) else "" for name in ("ask", "clicked")}
        return cls(View.of(**{name: given.get(name) for name in VIEW_FIELDS}), Tab.of(given.get("tab")),
                   foil if isinstance(foil, str) else "",
                   AnimationSettings(**{f.name: animation.get(f.name, f.default) for f in fields(AnimationSettings)}),
                   **text, branch=Branching.of(given.get("branch")), candidate=_index(given.get("candidate")),
                   example=_index(given.get("example"), None))


def _index(value, default: int | None = 0) -> int | None:
    """A row's index from the page: a whole number ≥ 0, else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


@dataclass
class Session:
    """What the server holds for one visitor's page, in one gr.State (a copy of this one per visitor): each field is
    a Slot of the page (ui.layout.Slot), set by the events that write it (ui/wiring.py handled)."""

    run: Run | None = None  # what the page shows
    twin: Twin | None = None  # its untrained twin, once Trained vs untrained made it
    judged: Judged | None = None  # head importance of its translation with every head on
    vectors: Vectors | None = None  # the softmax walk's q, k, v
    explained: Explained | None = None  # why its pieces (Why this word)
    norms: Norms | None = None  # its value norms
    toured: Tour | None = None  # its tour, once Tour made it
    signal: StopSignal = field(default_factory=StopSignal)  # Stop's: read by the running stream or replay


class Undeclared:
    """What an Inputs field holds, in tests ($ANATOMY_STRICT_INPUTS), when its event (ui/wiring.py) did not declare
    what it is read from: any use of it is an error that names it, where the app would read the default."""

    def __init__(self, name: str):
        self.name = name

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"the event did not declare what {self.name!r} is read from: add it to the handler's reads "
                        "in ui/wiring.py")

    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __iter__ = __len__ = __getitem__ = _refuse
    __contains__ = __call__ = __str__ = __int__ = __float__ = __index__ = __hash__ = _refuse

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._refuse()

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"Undeclared({self.name!r})"


class Declared(dict):
    """The values Gradio passes an event (ui/wiring.py handled): all that the event declared, and nothing else."""


def strict() -> bool:
    """Whether reading an undeclared input is an error (tests set $ANATOMY_STRICT_INPUTS) or gives the default."""
    return os.environ.get("ANATOMY_STRICT_INPUTS") == "1"


@dataclass(frozen=True)
class Inputs:
    """What one event reads from the page. A component the event does not pass leaves its field at the default (in
    tests, Undeclared)."""

    settings: PageSettings = PageSettings()
    view: View = View()  # the view controls, read by View.of (not yet fitted to a trace)
    run: Run | None = None
    twin: Twin | None = None
    judged: Judged | None = None
    vectors: Vectors | None = None
    explained: Explained | None = None
    norms: Norms | None = None
    tab: Tab = Tab.HEADS
    signal: StopSignal = field(default_factory=StopSignal)
    link: Link | None = None
    forced: str = ""  # the translation typed into Inspect
    clicked_head: str = ""  # the head a click on a thumbnail or map cell names (HeadMask link item)
    ask: str = ""  # what the viewer asks for (Viewed.ask)
    foil: str = ""  # the word Why this word compares the step's piece against
    branch: Branching | None = None  # the branch the viewer asks for (Viewed.branch)
    candidate: int = 0  # the beam candidate the viewer asks for (Viewed.candidate), from 0
    example: int | None = None  # the example the page asks for (Viewed.example)
    toured: Tour | None = None  # the tour of the shown translation, once Tour made it
    animation: AnimationSettings = AnimationSettings()

    @classmethod
    def of(cls, page: Page, values: Inputs | Mapping) -> Inputs:
        """Gradio's dict keyed by component as Inputs (Inputs, from tests and scripts, pass as they are)."""
        if isinstance(values, Inputs):
            return values
        session = values.get(page.session)
        if session is not None:  # its Slots, as a test passes them
            values = {**values, **{slot: getattr(session, name) for name, slot in page.slots.items()}}
        refuse = isinstance(values, Declared) and strict()
        settings = {name: values[c] if c in values else Undeclared(name) for name, c in page.settings.items()
                    if c in values or refuse}
        state = {name: values[c] if c in values else Undeclared(name) for name, c in page.state.items()
                 if c in values or refuse}
        viewed = Viewed.of(values.get(page.view))
        read = {"view": viewed.view, "tab": viewed.tab, "foil": viewed.foil, "animation": viewed.animation,
                "ask": viewed.ask, "clicked_head": viewed.clicked, "branch": viewed.branch,
                "candidate": viewed.candidate, "example": viewed.example}
        if refuse and page.view not in values:
            read = {name: Undeclared(name) for name in read}
        return cls(settings=PageSettings(**settings), **read, **state)
