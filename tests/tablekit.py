"""Self-made PDFs with tables whose cells we know (issue 26), drawn by reportlab at exact positions.

Each builder returns the pdf's bytes and the expected tables (rows of cells, header first), so that the tests and
``python -m bench.run parse-quality`` score the same documents.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

Rows = list[list[str]]

PROSE = (
    "The agency reviewed the comments it received on the proposal and adjusted the estimates where the "
    "commenters supplied better figures. Most of the changes concern the cost of labor in the field offices, "
    "which grew faster than expected during the last two years of the program."
)


def _canvas(buffer: io.BytesIO, title: str) -> object:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(buffer, pagesize=letter, invariant=1)
    pdf.setTitle(title)
    return pdf


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


STACKED_HEADER = ["# enc-layers", "Language", "TEDS simple", "TEDS complex", "TEDS all", "mAP (0.75)", "Time (secs)"]
STACKED_GROUPS = [
    ("6", [("OTSL", "0.965", "0.934", "0.955", "0.88", "2.73"), ("HTML", "0.969", "0.927", "0.955", "0.857", "5.39")]),
    ("4", [("OTSL", "0.938", "0.904", "0.927", "0.853", "1.97"), ("HTML", "0.952", "0.909", "0.938", "0.843", "3.77")]),
    ("2", [("OTSL", "0.923", "0.897", "0.915", "0.859", "1.91"), ("HTML", "0.945", "0.901", "0.931", "0.834", "3.81")]),
]


def stacked_table_pdf(*, rules: bool = True) -> tuple[bytes, list[Rows]]:
    """A paper's results table without vertical rules: a row-spanning label (vertically centred) beside two rows
    whose labels and values sit stacked in one grid cell (``6 | OTSL / HTML | 0.965 / 0.969``), under a caption
    and between paragraphs. ``rules``: draw the booktabs-style horizontal rules (top, under the header, bottom)."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Table structure results")
    xs = [72, 140, 210, 275, 345, 405, 470]
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    y = 740
    for line in _wrap(PROSE, 95)[:3]:
        pdf.drawString(72, y, line)  # type: ignore[attr-defined]
        y -= 13
    y -= 10
    pdf.drawString(72, y, "Table 1. HPO on PubTabNet: TEDS and mAP by the number of encoder layers.")  # type: ignore[attr-defined]
    y -= 18
    if rules:
        pdf.line(70, y + 12, 530, y + 12)  # type: ignore[attr-defined]
    pdf.setFont("Helvetica-Bold", 9)  # type: ignore[attr-defined]
    for x, label in zip(xs, STACKED_HEADER, strict=True):
        pdf.drawString(x, y, label)  # type: ignore[attr-defined]
    if rules:
        pdf.line(70, y - 4, 530, y - 4)  # type: ignore[attr-defined]
    pdf.setFont("Helvetica", 9)  # type: ignore[attr-defined]
    y -= 18
    expected: Rows = [STACKED_HEADER]
    for label, rows in STACKED_GROUPS:
        pdf.drawString(xs[0], y - 5.5, label)  # type: ignore[attr-defined]  # centred on its two rows
        for row in rows:
            for x, value in zip(xs[1:], row, strict=True):
                pdf.drawString(x, y, value)  # type: ignore[attr-defined]
            expected.append([label, *row])
            y -= 11
        y -= 6
    if rules:
        pdf.line(70, y + 10, 530, y + 10)  # type: ignore[attr-defined]
    y -= 14
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, y, "Deeper encoders gain little accuracy for the time they cost.")  # type: ignore[attr-defined]
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]


COST_HEADER = ["Cost item", "Year 1", "Year 2"]
COST_ROWS = [
    ("Labor cost", "$766,865", "$781,200"),
    ("Personnel costs for field staff and their supervisors", "$412,300", "$420,550"),
    ("Equipment", "$96,410", "$98,000"),
    ("Travel to the regional offices", "$55,120", "$57,900"),
    ("Training", "$23,400", "$24,100"),
    ("Rent of the storage facilities near the border crossings", "$118,000", "$121,540"),
    ("Printing", "$9,870", "$10,060"),
    ("Postage", "$4,215", "$4,390"),
    ("Contractor support for the data systems", "$301,000", "$310,030"),
    ("Office supplies", "$12,760", "$13,140"),
    ("Vehicle maintenance", "$38,900", "$40,070"),
    ("Telecommunications", "$27,330", "$28,150"),
    ("Insurance", "$19,480", "$20,060"),
    ("Legal review of the permits issued by the states", "$64,000", "$65,920"),
    ("Audit", "$31,500", "$32,440"),
    ("Total annual cost", "$1,980,150", "$2,027,550"),
]


def continued_table_pdf() -> tuple[bytes, list[Rows]]:
    """A full-width table inside a three-column page, with dot leaders and labels that wrap onto two lines,
    continued on the next page under a "—Continued" caption and its header repeated; page numbers at the foot."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Federal notice")
    page_rows = [COST_ROWS[:9], COST_ROWS[9:]]
    for page, rows in enumerate(page_rows, 1):
        pdf.setFont("Times-Roman", 9)  # type: ignore[attr-defined]
        lines = _wrap(PROSE + " " + PROSE, 34)
        top = 740 if page == 1 else 300
        for x in (54, 234, 414):  # three columns of prose, column by column (under the table on page 2)
            y = top
            for line in lines[:14]:
                pdf.drawString(x, y, line)  # type: ignore[attr-defined]
                y -= 11
        y = 570 if page == 1 else 740
        caption = "Table 2—Estimated Annual Costs of the Program"
        pdf.setFont("Times-Bold", 9)  # type: ignore[attr-defined]
        pdf.drawString(220, y, caption + ("—Continued" if page == 2 else ""))  # type: ignore[attr-defined]
        y -= 16
        pdf.setFont("Times-Bold", 9)  # type: ignore[attr-defined]
        pdf.drawString(60, y, COST_HEADER[0])  # type: ignore[attr-defined]
        pdf.drawRightString(470, y, COST_HEADER[1])  # type: ignore[attr-defined]
        pdf.drawRightString(560, y, COST_HEADER[2])  # type: ignore[attr-defined]
        pdf.setFont("Times-Roman", 9)  # type: ignore[attr-defined]
        y -= 14
        for label, one, two in rows:
            wrapped = _wrap(label, 34)
            for line in wrapped[:-1]:
                pdf.drawString(60, y, line)  # type: ignore[attr-defined]
                y -= 11
            last = wrapped[-1]
            dots = "." * max(
                4,
                int(
                    (390 - 60 - pdf.stringWidth(last + " ", "Times-Roman", 9)) / pdf.stringWidth(".", "Times-Roman", 9)
                ),
            )  # type: ignore[attr-defined]
            pdf.drawString(60, y, f"{last} {dots}")  # type: ignore[attr-defined]
            pdf.drawRightString(470, y, one)  # type: ignore[attr-defined]
            pdf.drawRightString(560, y, two)  # type: ignore[attr-defined]
            y -= 13
        pdf.setFont("Times-Roman", 9)  # type: ignore[attr-defined]
        pdf.drawString(300, 40, str(page))  # type: ignore[attr-defined]
        pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    expected: Rows = [COST_HEADER, *[list(r) for r in COST_ROWS]]
    return buffer.getvalue(), [expected]


def simple_rows(table: Sequence[Sequence[str | None]]) -> Rows:
    """Rows with None as ""."""
    return [[c or "" for c in row] for row in table]


SHARE_HEADER = ["Country", "Domestic (%)", "Imported (%)", "Unknown (%)", "Total (n)"]
SHARE_ROWS = [
    ("Austria", "86.2", "13.8", "0", "3,375"),
    ("Czech Republic", "98.6", "1.4", "0", "17,655"),
    ("Denmark", "3.1", "10.2", "86.7", "1,662"),
    ("United Kingdom", "24.0", "21.4", "54.6", "13,802"),
    ("EU Total", "65.1", "7.9", "27.0", "151,292"),
]
SHARE_NOTE = "Source: national reports to the agency, as received by the end of March"


def header_ruled_table_pdf() -> tuple[bytes, list[Rows]]:
    """A grid whose column rules are drawn in the header row only: the body rows are ruled across the whole width,
    so a ruling-line finder sees each body row as one wide cell; the last row, a note, really spans the width."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Share of cases by origin")
    xs = [85, 170, 255, 340, 425, 510]
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(85, 720, "Table 4. Reported cases by origin of infection, 2007.")  # type: ignore[attr-defined]
    top, height = 700, 16
    rows = [SHARE_HEADER, *[list(r) for r in SHARE_ROWS]]
    bottom = top - height * (len(rows) + 1)
    pdf.setLineWidth(0.5)  # type: ignore[attr-defined]
    for i in range(len(rows) + 2):  # every row ruled across the width
        pdf.line(xs[0], top - i * height, xs[-1], top - i * height)  # type: ignore[attr-defined]
    pdf.line(xs[0], top, xs[0], bottom)  # type: ignore[attr-defined]
    pdf.line(xs[-1], top, xs[-1], bottom)  # type: ignore[attr-defined]
    for x in xs[1:-1]:  # column rules in the header row only
        pdf.line(x, top, x, top - height)  # type: ignore[attr-defined]
    for i, row in enumerate(rows):
        y = top - (i + 1) * height + 5
        pdf.setFont("Helvetica-Bold" if i == 0 else "Helvetica", 9)  # type: ignore[attr-defined]
        pdf.drawString(xs[0] + 4, y, row[0])  # type: ignore[attr-defined]
        for x, value in zip(xs[2:], row[1:], strict=True):
            pdf.drawRightString(x - 4, y, value)  # type: ignore[attr-defined]
    pdf.setFont("Helvetica", 9)  # type: ignore[attr-defined]
    pdf.drawString(xs[0] + 4, bottom + 5, SHARE_NOTE)  # type: ignore[attr-defined]
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [[*rows, [SHARE_NOTE, "", "", "", ""]]]


WEIGHT_HEADER = ["Dose (ppm)", "No.", "Weight (g)", "Relative (%)"]
WEIGHT_SECTIONS = [
    ("Male", [("0", "39", "5.8", ""), ("250", "30", "5.9", "102"), ("500", "33", "6.0", "103")]),
    ("Female", [("0", "23", "5.4", ""), ("250", "34", "5.6", "104"), ("500", "32", "5.4", "100")]),
]


def sectioned_table_pdf() -> tuple[bytes, list[Rows]]:
    """A table without rules whose rows fall in sections, each under a label alone on its line and set off by more
    space than the rows (``Male`` ... ``Female``); the first row of a section leaves a cell empty."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Body weights")
    xs = [90, 170, 240, 330]  # right edges of the columns (numbers are right-aligned)
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, 730, "Table 3. Mean body weights of the pups by dose.")  # type: ignore[attr-defined]
    y = 700
    pdf.setFont("Helvetica-Bold", 9)  # type: ignore[attr-defined]
    for x, label in zip(xs, WEIGHT_HEADER, strict=True):
        pdf.drawRightString(x + 20, y, label)  # type: ignore[attr-defined]
    pdf.setFont("Helvetica", 9)  # type: ignore[attr-defined]
    expected: Rows = [WEIGHT_HEADER]
    y -= 16
    for label, rows in WEIGHT_SECTIONS:
        y -= 8
        pdf.drawString(72, y, label)  # type: ignore[attr-defined]
        expected.append([label, "", "", ""])
        y -= 20
        for row in rows:
            for x, value in zip(xs, row, strict=True):
                pdf.drawRightString(x + 20, y, value)  # type: ignore[attr-defined]
            expected.append(list(row))
            y -= 11
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, y - 20, "Weights are group means; the control group has no relative weight.")  # type: ignore[attr-defined]
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]


def lists_and_chart_pdf() -> bytes:
    """No table at all: a bulleted list, a numbered list, and a line chart's two value axes (0 to 450 by 50, and
    0 to 90 by 10) with its date labels under the plot, as a chart drawn with text labels looks."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Lists and a chart")
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    y = 740
    for item in ("polytechnic teachers,", "vocational subject teachers,", "senior lecturers, and", "tutors."):
        pdf.drawString(80, y, "•")  # type: ignore[attr-defined]
        pdf.drawString(100, y, item)  # type: ignore[attr-defined]
        y -= 14
    y -= 14
    steps = ("Compute the trip distance.", "Drop the idle time.", "Set the rate to 3 mph/s.", "Sum the trips.")
    for i, step in enumerate(steps, 1):
        pdf.drawString(80, y, f"{i}.")  # type: ignore[attr-defined]
        pdf.drawString(100, y, step)  # type: ignore[attr-defined]
        y -= 14
    y -= 30
    pdf.drawString(200, y, "Figure 2. Spread against the reference (bp)")  # type: ignore[attr-defined]
    y -= 20
    for i in range(10):  # the axes' tick labels, left and right of the plot
        pdf.drawRightString(100, y - i * 18, str(450 - 50 * i))  # type: ignore[attr-defined]
        pdf.drawString(480, y - i * 18, str(90 - 10 * i))  # type: ignore[attr-defined]
    pdf.rect(110, y - 9 * 18, 360, 9 * 18)  # type: ignore[attr-defined]
    pdf.drawString(110, y - 9 * 18 - 14, "Jan-08   Jul-08   Jan-09   Jul-09   Jan-10")  # type: ignore[attr-defined]
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue()


POPULATION_ROWS = [
    ("2-11 months", "1,087,948", "1,022,490", "292,652", "255,744", "3,350,188"),
    ("1-2", "2,586,688", "2,568,738", "647,701", "639,327", "8,002,463"),
    ("3-5", "3,867,692", "3,576,723", "935,862", "938,510", "11,654,990"),
    ("6-11", "7,808,033", "7,401,349", "1,770,525", "1,732,954", "22,527,176"),
    ("All", "90,057,499", "94,823,234", "14,392,149", "16,622,916", "251,097,002"),
]


def grid_around_values_pdf() -> tuple[bytes, list[Rows]]:
    """A grid drawn around the value columns only: the row labels stand left of it and the totals right of it, and
    its column rules part the groups (``White``: ``Male`` ``Female``), not the columns inside a group."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Population totals")
    label_x, rights, total_right = 74, [210, 280, 350, 420], 520
    grid = (150, 425)
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, 730, "Table 2.3: Population totals by age, gender and race.")  # type: ignore[attr-defined]
    top = 712
    pdf.setLineWidth(0.5)  # type: ignore[attr-defined]
    y = top - 12
    pdf.setFont("Helvetica-Bold", 9)  # type: ignore[attr-defined]
    pdf.drawString(label_x, y, "Age (years)")  # type: ignore[attr-defined]
    pdf.drawString(180, y, "White")  # type: ignore[attr-defined]
    pdf.drawString(320, y, "Black")  # type: ignore[attr-defined]
    pdf.drawRightString(total_right, y, "Total population")  # type: ignore[attr-defined]
    y -= 13
    for right, label in zip(rights, ("Male", "Female", "Male", "Female"), strict=True):
        pdf.drawRightString(right, y, label)  # type: ignore[attr-defined]
    header_bottom = y - 5
    pdf.setFont("Helvetica", 9)  # type: ignore[attr-defined]
    y -= 18
    for label, *values, total in POPULATION_ROWS:
        pdf.drawString(label_x, y, label)  # type: ignore[attr-defined]
        for right, value in zip(rights, values, strict=True):
            pdf.drawRightString(right, y, value)  # type: ignore[attr-defined]
        pdf.drawRightString(total_right, y, total)  # type: ignore[attr-defined]
        y -= 13
    bottom = y + 8
    for line_y in (top, header_bottom, bottom):
        pdf.line(grid[0], line_y, grid[1], line_y)  # type: ignore[attr-defined]
    for x in (grid[0], 285, grid[1]):  # the rules part the two groups only
        pdf.line(x, top, x, bottom)  # type: ignore[attr-defined]
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [[list(r) for r in POPULATION_ROWS]]


AGE_ROWS = [("1", "3,269,557"), ("2", "3,223,816"), ("3", "3,179,441"), ("14", "3,782,784"), ("15", "4,059,898")]


def unit_column_table_pdf() -> tuple[bytes, list[Rows]]:
    """Row labels made of a right-aligned number and a unit word left-aligned after a gap (``14 | years``), under one
    header (``Age``): the unit stands in a column of its own that has no header."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Population by age")
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, 730, "Table 5. Resident population by single year of age.")  # type: ignore[attr-defined]
    y = 706
    pdf.setFont("Helvetica-Bold", 9)  # type: ignore[attr-defined]
    pdf.drawString(80, y, "Age")  # type: ignore[attr-defined]
    pdf.drawRightString(300, y, "Total population")  # type: ignore[attr-defined]
    pdf.setFont("Helvetica", 9)  # type: ignore[attr-defined]
    expected: Rows = [["Age", "Total population"]]
    for age, total in AGE_ROWS:
        y -= 13
        pdf.drawRightString(100, y, age)  # type: ignore[attr-defined]
        pdf.drawString(112, y, "years")  # type: ignore[attr-defined]
        pdf.drawRightString(300, y, total)  # type: ignore[attr-defined]
        expected.append([f"{age} years", total])
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]


RATE_HEADER = ["Age group", "no.", "Rate", "(95% CI)", "no.", "Rate", "(95% CI)"]
RATE_ROWS = [
    ("45-54", "47", "21.8", "(16.0-29.0)", "91", "8.7", "(7.0-10.6)"),
    ("55-64", "116", "85.5", "(69.9-101.0)", "224", "31.9", "(27.7-36.1)"),
    ("65-74", "164", "234.9", "(199.0-270.9)", "527", "132.2", "(120.9-143.5)"),
    ("total", "777", "163.8", "(152.3-175.3)", "3,229", "130.9", "(126.3-135.4)"),
]
FIGURES_PROSE = (
    "Rates ranged from 97.4 per 100,000 (Utah) to 241.1 per 100,000 (District of Columbia), with a median of "
    "126.1 per 100,000 (North Carolina), and the rates of 12 states were above 150 per 100,000 in 2006 and 2007."
)


def table_above_prose_with_figures_pdf() -> tuple[bytes, list[Rows]]:
    """A table with narrow gutters, a note under it, and then two columns of running text that quote figures
    (``a median of 126.1 per 100,000``): the text lines are prose, not a row of the table, so they neither join it
    nor bridge its gutters."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Death rates")
    rights = [130, 165, 240, 290, 320, 395]  # right edges of the value columns, gutters of 12-25 points
    pdf.setFont("Helvetica-Bold", 8)  # type: ignore[attr-defined]
    pdf.drawString(72, 730, "Table 2. Number of deaths and death rates by age group, 2006")  # type: ignore[attr-defined]
    y = 710
    pdf.drawString(72, y, RATE_HEADER[0])  # type: ignore[attr-defined]
    for right, label in zip(rights, RATE_HEADER[1:], strict=True):
        pdf.drawRightString(right, y, label)  # type: ignore[attr-defined]
    pdf.setFont("Helvetica", 8)  # type: ignore[attr-defined]
    for label, *values in RATE_ROWS:
        y -= 12
        pdf.drawString(78, y, label)  # type: ignore[attr-defined]
        for right, value in zip(rights, values, strict=True):
            pdf.drawRightString(right, y, value)  # type: ignore[attr-defined]
    y -= 14
    pdf.drawString(72, y, "Abbreviation: CI = confidence interval.")  # type: ignore[attr-defined]
    y -= 9
    pdf.drawString(72, y, "* Per 100,000 standard population.")  # type: ignore[attr-defined]
    y -= 22
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    left, right = _wrap(FIGURES_PROSE, 44), _wrap(FIGURES_PROSE[60:] + " " + FIGURES_PROSE, 44)
    for a, b in zip(left, right, strict=False):
        pdf.drawString(72, y, a)  # type: ignore[attr-defined]
        pdf.drawString(320, y, b)  # type: ignore[attr-defined]
        y -= 12
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [[RATE_HEADER, *[list(r) for r in RATE_ROWS]]]


TALL_HEADER = [
    ["", "Body", "Weight"],
    ["", "weight", "relative"],
    ["", "at the", "to the"],
    ["", "end of", "weight of"],
    ["", "the study", "the controls"],
    ["Dose (ppm)", "(g)", "(%)"],
]
TALL_SECTIONS = [
    ("Male", [("0", "35.0", ""), ("250", "35.8", "102"), ("500", "34.7", "99"), ("1,000", "34.5", "99")]),
    ("Female", [("0", "33.6", ""), ("250", "33.9", "101"), ("500", "33.6", "100"), ("1,000", "32.7", "97")]),
]


def tall_header_table_pdf() -> tuple[bytes, list[Rows]]:
    """A table whose column headers wrap onto six lines (narrow columns, long names), over rows in sections
    (``Male``, ``Female``): every header line belongs to the header, joined per column."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Body weights at the end of the study")
    rights = [110, 190, 260]
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, 740, "Table 6. Body weights of the rats at the end of the study.")  # type: ignore[attr-defined]
    y = 720
    pdf.setFont("Helvetica-Bold", 8)  # type: ignore[attr-defined]
    for line in TALL_HEADER:
        if line[0]:
            pdf.drawString(72, y, line[0])  # type: ignore[attr-defined]
        for right, word in zip(rights[1:], line[1:], strict=True):
            pdf.drawRightString(right, y, word)  # type: ignore[attr-defined]
        y -= 9
    header = [" ".join(line[c] for line in TALL_HEADER if line[c]) for c in range(3)]
    expected: Rows = [header]
    pdf.setFont("Helvetica", 8)  # type: ignore[attr-defined]
    for label, rows in TALL_SECTIONS:
        y -= 6
        pdf.drawString(72, y, label)  # type: ignore[attr-defined]
        expected.append([label, "", ""])
        y -= 14
        for row in rows:
            pdf.drawRightString(rights[0], y, row[0])  # type: ignore[attr-defined]
            for right, value in zip(rights[1:], row[1:], strict=True):
                pdf.drawRightString(right, y, value)  # type: ignore[attr-defined]
            expected.append(list(row))
            y -= 10
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]


ENROLLMENT_HEADER = ["Source", "2007-08", "2008-09", "2009-10", "2010-11"]
ENROLLMENT_GROUPS = [
    ("Enrollment, in thousands", [("Actual", "49,293", "49,266", "49,373", "49,484")]),
    (
        "Projected enrollment, in thousands",
        [
            ("Edition 2017", "49,644", "49,825", "50,067", "50,353"),
            ("Edition 2018", "49,470", "49,623", "49,788", "50,034"),
        ],
    ),
    (
        "Percentage difference between actual and projected values",
        [("Edition 2017", "0.7", "1.1", "1.4", "1.8"), ("Edition 2018", "0.4", "0.7", "0.8", "1.1")],
    ),
]


def spanning_group_labels_pdf() -> tuple[bytes, list[Rows]]:
    """A table whose groups of rows open with a label centred across all the value columns, alone on its line
    (``Enrollment, in thousands``): it crosses the gutters, but the columns under it stay apart, and it stands in
    the first column it reaches (a spanning cell's place)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Enrollment projections")
    rights = [230, 310, 390, 470]
    pdf.setFont("Helvetica", 10)  # type: ignore[attr-defined]
    pdf.drawString(72, 740, "Table 7. Actual and projected enrollment.")  # type: ignore[attr-defined]
    y = 718
    pdf.setFont("Helvetica-Bold", 8)  # type: ignore[attr-defined]
    pdf.drawString(72, y, ENROLLMENT_HEADER[0])  # type: ignore[attr-defined]
    for right, label in zip(rights, ENROLLMENT_HEADER[1:], strict=True):
        pdf.drawRightString(right, y, label)  # type: ignore[attr-defined]
    expected: Rows = [ENROLLMENT_HEADER]
    pdf.setFont("Helvetica", 8)  # type: ignore[attr-defined]
    centre = (rights[0] - 60 + rights[-1]) / 2
    for label, rows in ENROLLMENT_GROUPS:
        y -= 12
        pdf.drawCentredString(centre, y, label)  # type: ignore[attr-defined]
        start = centre - stringWidth(label, "Helvetica", 8) / 2
        column = 1 + next(i for i, right in enumerate(rights) if start < right)  # the first column it reaches
        expected.append(["", "", "", "", ""])
        expected[-1][column] = label
        for row in rows:
            y -= 11
            pdf.drawString(72, y, row[0])  # type: ignore[attr-defined]
            for right, value in zip(rights, row[1:], strict=True):
                pdf.drawRightString(right, y, value)  # type: ignore[attr-defined]
            expected.append(list(row))
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]


INEQUALITY_YEARS = ["2003", "2004", "2005", "2006", "2007"]
INEQUALITY_ROWS = [
    ("Household income inequality measured by the Gini index", ("0.4640", "0.4660", "0.4690", "0.4700", "0.4630")),
    ("Between-state income inequality measured by the Gini index", ("0.0624", "0.0701", "0.0677", "0.0713", "0.0749")),
    (
        "Premature mortality in years of potential life lost before age 75",
        ("6970.7", "6841.5", "6912.9", "6882.0", "6799.5"),
    ),
    (
        "Between-state inequality in premature mortality by the Gini index",
        ("0.0868", "0.0926", "0.0939", "0.0963", "0.0956"),
    ),
]


def long_row_labels_pdf() -> tuple[bytes, list[Rows]]:
    """A table whose row labels are sentences wrapped onto two lines, the values centred between them: the label
    lines read like a column of running text, but each has a number at its height on its right. The whole table
    is set in one bold face, so that bold tells no section title from the rest of a label."""
    buffer = io.BytesIO()
    pdf = _canvas(buffer, "Inequality measures")
    rights = [250, 300, 350, 400, 450]
    pdf.setFont("Helvetica-Bold", 8)  # type: ignore[attr-defined]
    pdf.drawString(72, 740, "TABLE. Inequality in income and premature mortality, 2003-2007")  # type: ignore[attr-defined]
    y = 718
    pdf.drawString(72, y, "Inequality measure")  # type: ignore[attr-defined]
    for right, year in zip(rights, INEQUALITY_YEARS, strict=True):
        pdf.drawRightString(right, y, year)  # type: ignore[attr-defined]
    expected: Rows = [["Inequality measure", *INEQUALITY_YEARS]]
    pdf.setFont("Helvetica-Bold", 8)  # type: ignore[attr-defined]
    y -= 12
    for label, values in INEQUALITY_ROWS:
        first, second = _wrap(label, 38)
        y -= 10
        pdf.drawString(72, y + 4, first)  # type: ignore[attr-defined]
        pdf.drawString(72, y - 5, second)  # type: ignore[attr-defined]
        for right, value in zip(rights, values, strict=True):
            pdf.drawRightString(right, y, value)  # type: ignore[attr-defined]
        expected.append([label, *values])
        y -= 14
    pdf.showPage()  # type: ignore[attr-defined]
    pdf.save()  # type: ignore[attr-defined]
    return buffer.getvalue(), [expected]
