"""Progress bars: the progress= keyword (None delayed, True, False), the modes ("auto", "lines" for CI
logs, "off"), plain periodic lines on a stream that is not a terminal, and the validation."""

from __future__ import annotations

import io
import time

import pytest

from chainamp._numerics import check_progress, progress_bar, progress_mode
from chainamp._numerics import progress as P
from chainamp.errors import InvalidParameterError


@pytest.fixture
def fast(monkeypatch):
    """Tiny delay and line interval, so progress output appears within a test."""
    monkeypatch.setattr(P, "PROGRESS_DELAY", 0.05)
    monkeypatch.setattr(P, "PROGRESS_LINE_INTERVAL", 0.05)


def _work(bar, steps=4, pause=0.03):
    for _ in range(steps):
        time.sleep(pause)
        bar.update(1)


# --------------------------------------------------------------------------- check_progress
@pytest.mark.parametrize("value, expected", [(None, None), (True, True), (False, False)], ids=["none", "true", "false"])
def test_check_progress_accepts(value, expected):
    assert check_progress(value) is expected


def test_check_progress_accepts_numpy_bools():
    np = pytest.importorskip("numpy")
    assert check_progress(np.bool_(True)) is True


@pytest.mark.parametrize("value", [1, 0, "yes", 0.5], ids=["one", "zero", "text", "float"])
def test_check_progress_refuses(value):
    with pytest.raises(TypeError, match=rf"progress must be None, True or False \(got {value!r}\)"):
        check_progress(value)


def test_progress_bar_validates_and_mode_validates():
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        progress_bar(3, "x", progress="on")
    with pytest.raises(InvalidParameterError, match=r"mode must be one of \('auto', 'lines', 'off'\) \(got 'loud'\)"):
        with progress_mode("loud"):
            pass  # pragma: no cover


# --------------------------------------------------------------------------- progress= keyword
def test_false_is_silent_and_counts():
    buf = io.StringIO()
    with progress_bar(5, "pairs", progress=False, stream=buf) as bar:
        bar.update(2)
        bar.update(3)
        bar.set_postfix_str("stage")
    assert bar.n == 5 and buf.getvalue() == ""


def test_none_is_silent_for_fast_work():
    buf = io.StringIO()
    with progress_bar(5, "pairs", stream=buf) as bar:  # the default delay is 2 s: this takes microseconds
        bar.update(5)
    assert buf.getvalue() == ""


def test_none_shows_after_the_delay(fast):
    buf = io.StringIO()
    with progress_bar(4, "pairs", unit="pairs", stream=buf) as bar:
        _work(bar)
    assert "pairs:" in buf.getvalue() and "/4 pairs [" in buf.getvalue()  # throttled: not every count is drawn


def test_true_shows_at_once():
    buf = io.StringIO()
    with progress_bar(3, "steps", progress=True, stream=buf) as bar:
        bar.update(1)
    assert "steps" in buf.getvalue()


# --------------------------------------------------------------------------- modes
def test_mode_off_silences_none_but_not_true(fast):
    buf = io.StringIO()
    with progress_mode("off"):
        with progress_bar(4, "quiet", stream=buf) as bar:
            _work(bar)
        assert buf.getvalue() == ""
        with progress_bar(1, "asked", progress=True, stream=buf) as bar:
            bar.update(1)
    assert "asked" in buf.getvalue()


def test_mode_is_restored():
    with progress_mode("off"):
        with progress_mode("lines"):
            assert P._MODE.get() == "lines"
        assert P._MODE.get() == "off"
    assert P._MODE.get() == "auto"


def test_lines_mode_prints_plain_lines_to_a_non_tty_stream(fast):
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(4, "pairs", unit="pairs", stream=buf) as bar:
            _work(bar, steps=4, pause=0.06)
    text = buf.getvalue()
    lines = text.splitlines()
    assert len(lines) >= 2, text
    assert "\r" not in text and "\x1b" not in text  # no carriage returns, no terminal escapes
    assert all(line.startswith("pairs: ") for line in lines)
    assert lines[-1].startswith("pairs: 4/4 pairs")
    assert "#" not in text and "|" not in text  # plain text, no bar drawing
    assert sum(line.startswith("pairs: 4/4") for line in lines) == 1  # the closing redraw is not repeated


def test_lines_mode_keeps_printing_during_one_long_step(fast):
    """A computation stuck in one block still shows it is alive (a line every interval)."""
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(2, "solve", unit="stage", stream=buf) as bar:
            time.sleep(0.4)  # no update for 8 intervals
            bar.update(2)
    lines = buf.getvalue().splitlines()
    assert sum(line.startswith("solve: 0/2") for line in lines) >= 3, lines
    assert lines[-1].startswith("solve: 2/2")


def test_lines_mode_is_silent_for_fast_work():
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(3, "pairs", stream=buf) as bar:
            bar.update(3)
    assert buf.getvalue() == ""


def test_lines_mode_heartbeat_stops_when_the_bar_closes(fast):
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(1, "x", stream=buf) as bar:
            time.sleep(0.12)
            bar.update(1)
    assert not bar._beat.is_alive()
    before = buf.getvalue()
    time.sleep(0.15)
    assert buf.getvalue() == before


def test_lines_mode_unknown_total(fast):
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(None, "blocks", unit="block", stream=buf) as bar:
            _work(bar, steps=3, pause=0.06)
    text = buf.getvalue()
    assert "blocks: 3 block [" in text
    assert "/?" not in text and "<" not in text  # issue 18: no "3/?" and no remaining "<00:00" for an open total


class _Log(io.StringIO):
    """stderr redirected to a file: not a terminal."""

    def isatty(self) -> bool:
        return False


def test_auto_mode_prints_plain_lines_when_the_stream_is_not_a_terminal(fast):
    """Issue 18: Python progress in a log was tqdm bars joined by carriage returns; now plain lines, as the CLI."""
    buf = _Log()
    with progress_bar(4, "pairs", unit="pairs", stream=buf) as bar:  # mode "auto", the default
        _work(bar, steps=4, pause=0.06)
    text = buf.getvalue()
    assert text and "\r" not in text and "\x1b" not in text
    assert text.splitlines()[-1].startswith("pairs: 4/4 pairs")


def test_auto_mode_draws_tqdm_on_a_terminal(fast):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    buf = Tty()
    with progress_bar(4, "pairs", unit="pairs", stream=buf) as bar:
        _work(bar, steps=4, pause=0.06)
    assert "\r" in buf.getvalue()  # tqdm redraws its bar in place on a terminal


def test_lines_mode_nested_bars_have_no_cursor_escapes(fast):
    """An outer stage bar and an inner pair bar (tqdm position 1): still plain lines, one per refresh."""
    buf = io.StringIO()
    with progress_mode("lines"):
        with progress_bar(2, "stages", unit="stage", stream=buf) as outer:
            with progress_bar(3, "pairs", unit="pairs", stream=buf) as inner:
                _work(inner, steps=3, pause=0.06)
            outer.update(2)
    text = buf.getvalue()
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert any(line.startswith("pairs: 3/3") for line in lines) and lines[-1].startswith("stages: 2/2")
    assert all(line.startswith(("pairs: ", "stages: ")) for line in lines)


def test_tables_align_numbers_right_and_text_left():
    """Issue 18 (reports): text columns were right-aligned in the HTML reports."""
    from chainamp._numerics import html_table, text_table

    rows = [["tight", 0.5, "\u2248 0", "no better than M here"], ["ldp", 1.25, "-", ""]]
    html = html_table(["source", "eps", "delta", "note"], rows)
    assert '<td>tight</td><td class="num">0.5</td><td class="num">\u2248 0</td><td>no better than M here</td>' in html
    assert '<th>source</th><th class="num">eps</th>' in html
    lines = text_table(["source", "eps", "delta", "note"], rows).splitlines()
    assert lines[2].startswith("tight    0.5    \u2248 0  no better") and lines[3] == "ldp     1.25      -"


def test_lines_mode_fast_bars_start_no_thread():
    """A bar closed before its first interval never starts a heartbeat thread (one shared watcher schedules
    them), so the many short computations of a run cost no thread each."""
    import threading

    with progress_mode("lines"):
        with progress_bar(3, "pairs", stream=io.StringIO()) as bar:
            bar.update(3)
    assert bar._beat is None
    before = threading.active_count()
    for _ in range(50):
        with progress_mode("lines"):
            with progress_bar(3, "pairs", stream=io.StringIO()) as bar:
                bar.update(3)
    assert threading.active_count() <= before + 1  # at most the watcher itself
    assert id(bar) not in P._DUE  # a closed bar is no longer scheduled


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_lines_mode_heartbeat_in_a_forked_child(fast):
    """A child forked after the parent's watcher started gets its own (the parent's thread is not inherited)."""
    import os

    with progress_mode("lines"):
        with progress_bar(2, "parent", stream=io.StringIO()) as bar:
            bar.update(2)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        buf = io.StringIO()
        with progress_mode("lines"):
            with progress_bar(2, "child", stream=buf) as bar:
                time.sleep(0.3)
                bar.update(2)
        os._exit(0 if buf.getvalue().count("child: 0/2") >= 2 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
