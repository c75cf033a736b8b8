"""Source of cairo-policy.pdf (see make.sh): the text of policy.ps, drawn
with Cairo's PDF surface. Paragraph lines are justified word by word, so
the gaps between words are positioning, not space characters, as in the
output of layout engines that justify text."""

import sys

import cairo

FONT = "DejaVu Sans"
SIZE = 11
LEADING = 14
WIDTH = 270


def justify(ctx, x, y, line, last):
    """Draw the words of line from x so that it spans WIDTH, unless it is
    the last line of its paragraph or much shorter (it ends in a hyphen)."""
    words = line.split()
    widths = [ctx.text_extents(w).x_advance for w in words]
    gap = ctx.text_extents(" ").x_advance
    short = ctx.text_extents(line).x_advance < 0.8 * WIDTH
    if not last and not short and len(words) > 1:
        gap = (WIDTH - sum(widths)) / (len(words) - 1)
    for word, width in zip(words, widths):
        ctx.move_to(x, y)
        ctx.show_text(word)
        x += width + gap


def paragraph(ctx, x, y, lines):
    for i, line in enumerate(lines):
        justify(ctx, x, y, line, i == len(lines) - 1)
        y += LEADING
    return y


def column(ctx, x, y, lines):
    for line in lines:
        ctx.move_to(x, y)
        ctx.show_text(line)
        y += LEADING


def heading(ctx, x, y, text):
    """Draw text larger, in the same face (one embedded font keeps the file
    small)."""
    ctx.set_font_size(SIZE + 2)
    ctx.move_to(x, y)
    ctx.show_text(text)
    ctx.set_font_size(SIZE)


def main(path):
    surface = cairo.PDFSurface(path, 420, 420)
    surface.set_metadata(cairo.PDF_METADATA_CREATE_DATE, "2026-01-01T00:00:00Z")
    ctx = cairo.Context(surface)
    ctx.select_font_face(FONT, cairo.FONT_SLANT_NORMAL, cairo.FONT_WEIGHT_NORMAL)
    ctx.set_font_size(SIZE)

    heading(ctx, 40, 50, "Parking policy")
    y = paragraph(ctx, 40, 80, [
        "Each employee gets one parking permit. Permits",
        "are issued by the facilities office and must be",
        "displayed behind the windscreen at all times.",
    ])
    paragraph(ctx, 40, y + LEADING, [
        "Visitors park in the marked bays near the main",
        "entrance. A visitor permit is valid for one day",
        "and can be requested at the reception desk; an",
        "unused permit expires automat-",
        "ically at midnight.",
    ])
    ctx.show_page()

    heading(ctx, 40, 50, "Cycling")
    column(ctx, 40, 68, [
        "Bicycle racks stand in",
        "the inner courtyard.",
        "Showers are on the",
        "ground floor.",
    ])
    heading(ctx, 230, 50, "Electric cars")
    column(ctx, 230, 68, [
        "Charging points are",
        "on level two of the",
        "garage. Book a slot",
        "in the staff portal.",
    ])
    ctx.show_page()
    surface.finish()


if __name__ == "__main__":
    main(sys.argv[1])
