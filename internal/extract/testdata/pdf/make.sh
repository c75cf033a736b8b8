#!/bin/sh
# Regenerates the PDF fixtures of this directory from their sources, with two
# real producers: Ghostscript (ps2pdf) and Cairo (through its Python binding),
# and each of those rewritten by poppler's pdfunite.
# The generated files are committed, so tests need neither tool.
#
#   Debian: apt-get install ghostscript python3-cairo poppler-utils
#
# ps2pdf-policy.pdf   policy.ps through ps2pdf: lines set with the ' operator
#                     and a leading (TL), base-14 fonts without widths.
# cairo-policy.pdf    policy_cairo.py: lines placed with Td, justified words
#                     separated by TJ positioning instead of spaces, and
#                     subset fonts with widths.
# pdfunite-*.pdf      the two above through pdfunite, which writes a trailer
#                     whose /Size is smaller than its table (the catalog's
#                     number is past it). pdfunite's output differs from run
#                     to run (its /ID).
#
# All hold the same text: page 1 a heading and two paragraphs of several
# lines, one word hyphenated across a line break; page 2 two columns.
set -eu
cd "$(dirname "$0")"
# Fixed dates and identifiers keep the output stable from run to run.
export SOURCE_DATE_EPOCH=1767225600
ps2pdf -dPDFSETTINGS=/default policy.ps ps2pdf-policy.pdf
/usr/bin/python3 policy_cairo.py cairo-policy.pdf
pdfunite ps2pdf-policy.pdf pdfunite-ps2pdf-policy.pdf
pdfunite cairo-policy.pdf pdfunite-cairo-policy.pdf
ls -l ./*.pdf
