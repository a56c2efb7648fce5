"""``CrashReport.image_for`` by address: indexed (a 16 MiB report has thousands of images and
frames), and still exactly the linear rule - the containing image loaded last, first listed on
ties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport


def linear(report: CrashReport, address: int) -> CrashImage | None:
    found = [image for image in report.images if image.contains(address)]
    return max(found, key=lambda image: image.load_address) if found else None


images = st.builds(
    lambda start, length, name: CrashImage(name, start, None if length is None else start + length),
    st.integers(0, 200),
    st.none() | st.integers(0, 60),
    st.sampled_from("abcdef"),
)


@settings(max_examples=300, deadline=None)
@given(listed=st.lists(images, max_size=12), addresses=st.lists(st.integers(0, 300), max_size=8))
def test_the_index_finds_what_a_linear_scan_finds(listed, addresses):
    report = CrashReport(format="test", images=listed)
    for address in addresses:
        assert report.image_for(CrashFrame(address)) is linear(report, address)


def test_the_index_follows_a_replaced_or_grown_image_list():
    report = CrashReport(format="test", images=[CrashImage("a", 0, 10)])
    assert report.image_for(CrashFrame(5)).name == "a"
    report.images.append(CrashImage("b", 4, 8))
    assert report.image_for(CrashFrame(5)).name == "b"
    report.images = [CrashImage("c", 100, 110)]
    assert report.image_for(CrashFrame(5)) is None
    assert report.image_for(CrashFrame(105)).name == "c"
