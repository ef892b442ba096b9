"""Regenerate the binary files of the sample corpus in ``examples/`` (the pdf, the docx and the scanned page).

The outputs are committed so that ``make run`` needs neither reportlab nor a build step; this
script only has to run when their text changes. Both outputs are byte-for-byte reproducible:
reportlab runs in invariant mode and the docx zip gets fixed timestamps and core properties.

The scanned page is a reportlab page rendered at 150 dpi by PDFium and thresholded to black and white, as an
office scanner saves it: it has no text layer, so ``make run`` shows OCR at work.

Usage: ``python scripts/make_examples.py [--out examples]`` (needs reportlab, python-docx and pypdfium2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import zipfile
from pathlib import Path

SOLAR_SYSTEM: list[tuple[str, list[str]]] = [
    (
        "The Sun and the Inner Planets",
        [
            "The Sun is a middle-aged yellow dwarf star that holds about 99.8 percent of the mass of the "
            "solar system. It formed about 4.6 billion years ago from a collapsing cloud of gas and dust, "
            "and it shines by fusing hydrogen into helium in its core.",
            "The four inner planets, Mercury, Venus, Earth and Mars, are rocky worlds with metallic cores. "
            "Mercury is the smallest planet and the closest to the Sun; it has almost no atmosphere, so its "
            "surface swings from about 430 degrees Celsius by day to minus 180 degrees at night.",
            "Venus has a thick carbon dioxide atmosphere with clouds of sulfuric acid. Its runaway greenhouse "
            "effect makes it the hottest planet, at around 465 degrees Celsius, even though Mercury is "
            "closer to the Sun. Venus also rotates backwards, very slowly: its day is longer than its year.",
            "Earth is the only world known to support life and the only planet with liquid water on its "
            "surface. Mars is a cold desert with a thin atmosphere, the largest volcano in the solar "
            "system, Olympus Mons, and polar caps of water ice and frozen carbon dioxide.",
        ],
    ),
    (
        "The Giant Planets",
        [
            "Beyond the asteroid belt lie the four giant planets. Jupiter and Saturn are gas giants made "
            "mostly of hydrogen and helium; Uranus and Neptune are ice giants, with a larger share of water, "
            "ammonia and methane in their interiors.",
            "Jupiter is the largest planet, more than twice as massive as all the other planets combined. "
            "Its Great Red Spot is a storm larger than Earth that has been observed for more than 150 years. Its four "
            "large Galilean moons, Io, Europa, Ganymede and Callisto, were discovered by Galileo in 1610; "
            "Ganymede is the largest moon in the solar system.",
            "Saturn is famous for its bright rings, made of countless pieces of water ice and rock ranging "
            "from dust grains to house-sized blocks. Saturn is less dense than water. Its largest moon, "
            "Titan, has a thick nitrogen atmosphere and lakes of liquid methane and ethane.",
            "Uranus rotates on its side, with an axial tilt of about 98 degrees, probably the result of an "
            "ancient collision. Neptune, the outermost planet, was found in 1846 from predictions based on "
            "irregularities in the orbit of Uranus. It has the fastest winds measured on any planet.",
        ],
    ),
    (
        "Dwarf Planets and Small Bodies",
        [
            "In 2006 the International Astronomical Union defined a planet as a body that orbits the Sun, is "
            "massive enough to be nearly round, and has cleared the neighbourhood around its orbit. Pluto "
            "meets the first two conditions but not the third, so it was reclassified as a dwarf planet.",
            "Ceres, the largest object in the asteroid belt between Mars and Jupiter, is also a dwarf planet. "
            "The asteroid belt holds millions of rocky bodies, but their total mass is only a few percent of "
            "the mass of the Moon.",
            "The Kuiper belt is a wide ring of icy bodies beyond Neptune that includes Pluto, Haumea, Makemake "
            "and Eris. Far beyond it, the Oort cloud is thought to surround the solar system as a vast "
            "spherical shell of icy objects, up to a light-year or more from the Sun.",
            "Comets are icy bodies from these distant regions. When a comet approaches the Sun, its ice "
            "turns to gas and releases dust, forming a glowing coma and tails that point away from the Sun. "
            "Halley's Comet returns about every 76 years and will next pass close to the Sun in 2061.",
        ],
    ),
]

BICYCLE_TITLE = "Bicycle Maintenance Checklist"
BICYCLE_SECTIONS: list[tuple[str, list[str]]] = [
    (
        "Tyres",
        [
            "Check tyre pressure every week with a gauge; tyres lose air slowly even without a puncture. "
            "The recommended range is printed on the tyre sidewall. Road tyres typically run at 5 to 8 bar, "
            "mountain bike tyres at 1.5 to 2.5 bar.",
            "Inspect the tread for cuts, embedded glass and worn patches, and replace a tyre when the casing "
            "shows through.",
        ],
    ),
    (
        "Chain and drivetrain",
        [
            "Wipe the chain with a rag and apply a drop of chain lubricant to each roller, then wipe off the "
            "excess; lubricant left on the outside attracts dirt. Clean and lubricate the chain every few "
            "hundred kilometres and after riding in rain.",
            "Measure chain wear with a chain checker. Replace the chain at 0.5 percent elongation on 11- and "
            "12-speed drivetrains and at 0.75 percent on others; a worn chain quickly wears out the cassette "
            "and chainrings.",
        ],
    ),
    (
        "Brakes",
        [
            "Squeeze each brake lever: it should stop firmly well before touching the handlebar. Replace rim "
            "brake pads when the grooves are worn away and disc brake pads when less than about 1 millimetre "
            "of pad material remains.",
            "Keep oil away from disc rotors and pads. Contaminated pads squeal and lose power and usually have "
            "to be replaced.",
        ],
    ),
]
LARGEST_MOONS = [
    ("Moon", "Planet", "Diameter (km)", "Discovered"),
    ("Ganymede", "Jupiter", "5,268", "1610"),
    ("Titan", "Saturn", "5,150", "1655"),
    ("Callisto", "Jupiter", "4,821", "1610"),
    ("Io", "Jupiter", "3,643", "1610"),
    ("The Moon", "Earth", "3,475", "prehistory"),
    ("Europa", "Jupiter", "3,122", "1610"),
    ("Triton", "Neptune", "2,707", "1846"),
]
LIGHTHOUSE_LOG = [
    "Keeper's log, Skerry Point light, week of 14 March 1927",
    "Monday. Wind north-westerly, strong. Lamp lit at 18:42 and put out at 06:10. The lens was cleaned "
    "and the brass polished before noon, as every day.",
    "Tuesday. Fog from 02:00 until dawn: the fog horn was sounded every thirty seconds for four hours. "
    "Paraffin used: eleven gallons.",
    "Wednesday. The supply boat landed coal, paraffin and fresh water. The relief keeper, Mr Ross, "
    "arrived and took the night watch.",
    "Thursday. A schooner passed close to the reef at dusk and was warned off with the signal lamp. "
    "The wick was trimmed twice during the night.",
]
BICYCLE_INTERVALS = [
    ("Task", "Interval"),
    ("Check tyre pressure", "Weekly"),
    ("Clean and lubricate chain", "Every 200 to 300 km"),
    ("Check brake pads", "Monthly"),
    ("Check bolts for tightness", "Monthly"),
    ("Full service", "Yearly"),
]

_FIXED_TIME = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def make_pdf() -> bytes:
    """Render the three-page solar-system pdf, one subtopic per page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    story: list[object] = []
    for number, (heading, paragraphs) in enumerate(SOLAR_SYSTEM):
        if number:
            story.append(PageBreak())
        story.append(Paragraph(heading, styles["Heading1"]))
        for text in paragraphs:
            story.append(Paragraph(text, styles["BodyText"]))
            story.append(Spacer(1, 6))
        if number == 1:  # the giant planets' page: a ruled table of the largest moons
            story.append(Paragraph("The largest moons", styles["Heading2"]))
            table = Table(LARGEST_MOONS)
            table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            story.append(table)
    buffer = io.BytesIO()
    document = SimpleDocTemplate(buffer, pagesize=A4, title="The Solar System", author="ragindex examples", invariant=1)
    document.build(story)
    return buffer.getvalue()


def make_scan() -> bytes:
    """A scanned page of a lighthouse keeper's log: a png with no text layer, for OCR."""
    import pypdfium2
    from reportlab.lib.pagesizes import A5
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer

    styles = getSampleStyleSheet()
    story: list[object] = [Paragraph(LIGHTHOUSE_LOG[0], styles["Heading2"])]
    for text in LIGHTHOUSE_LOG[1:]:
        story += [Paragraph(text, styles["BodyText"]), Spacer(1, 4)]
    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A5, invariant=1).build(story)
    document = pypdfium2.PdfDocument(buffer.getvalue())
    image = document[0].render(scale=150 / 72, grayscale=True).to_pil()
    document.close()
    scanned = image.point(lambda value: 255 if value > 160 else 0).convert("1")
    out = io.BytesIO()
    scanned.save(out, format="PNG", optimize=True)
    return out.getvalue()


def make_docx() -> bytes:
    """Build the bicycle-maintenance docx: title, headed sections, a list and a table."""
    import docx

    document = docx.Document()
    document.add_heading(BICYCLE_TITLE, level=0)
    document.add_paragraph("A short routine keeps a bicycle safe and makes its parts last much longer.")
    for heading, paragraphs in BICYCLE_SECTIONS:
        document.add_heading(heading, level=1)
        for text in paragraphs:
            document.add_paragraph(text)
    document.add_heading("Service intervals", level=1)
    table = document.add_table(rows=len(BICYCLE_INTERVALS), cols=2)
    for row, values in zip(table.rows, BICYCLE_INTERVALS, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Before every ride", level=2)
    for item in ("Tyres firm", "Brakes work", "Quick-release levers and thru-axles closed", "Lights charged"):
        document.add_paragraph(item, style="List Bullet")

    properties = document.core_properties
    properties.title = BICYCLE_TITLE
    properties.author = "ragindex examples"
    properties.last_modified_by = "ragindex examples"
    properties.created = _FIXED_TIME
    properties.modified = _FIXED_TIME
    properties.revision = 1
    buffer = io.BytesIO()
    document.save(buffer)
    return _normalise_zip(buffer.getvalue())


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite a zip with fixed member timestamps so that equal content gives equal bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            target.writestr(info, source.read(member.filename))
    return out.getvalue()


def main() -> None:
    """Write the pdf, the docx and the scanned png of the sample corpus into the output directory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "examples")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    outputs = (
        ("solar_system.pdf", make_pdf()),
        ("bicycle_maintenance.docx", make_docx()),
        ("lighthouse_log_scan.png", make_scan()),
    )
    for name, data in outputs:
        (out / name).write_bytes(data)
        print(f"wrote {out / name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
