"""The depth dial's slider is logarithmic from 1 to the model's max_depth: each doubling takes the same width, its
marks neither collide nor run past the track, and it moves the depth the page sends."""

import math

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MARKS = """() => {
  const track = document.getElementById("depth-slider").getBoundingClientRect();
  return [...document.querySelectorAll(".dial-marks span")].map((s) => {
    const r = s.getBoundingClientRect();
    return { depth: Number(s.dataset.depth), left: r.left, right: r.right,
             track_left: track.left, track_right: track.right };
  });
}"""


def test_the_depth_slider_is_logarithmic_with_marks_that_neither_collide_nor_clip(page):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    high = int(page.locator("#depth").get_attribute("max"))
    marks = page.evaluate(MARKS)
    depths = [m["depth"] for m in marks]
    assert depths[0] == 1 and depths[-1] == high
    for before, after in zip(marks, marks[1:], strict=False):
        assert after["left"] >= before["right"] + 4, (before, after)  # a gap between neighbouring labels
    assert marks[0]["left"] >= marks[0]["track_left"] - 1 and marks[-1]["right"] <= marks[-1]["track_right"] + 1
    # Depth 16 sits at log(16)/log(max) of the track: more than half of a 1-128 dial, not 12% of it.
    move = "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    page.locator("#depth-slider").evaluate(move, "500")
    middle = int(page.locator("#depth").input_value())
    assert middle == round(high**0.5)
    page.locator("#depth").evaluate(move, "16")
    position = int(page.locator("#depth-slider").input_value())
    assert position == round(1000 * math.log(16) / math.log(high))
    page.watch.assert_clean()
