package mdexport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Bounds of one parse.
const (
	// maxNesting bounds how deep lists and block quotes nest; a marker that would open a deeper
	// one is text. goldmark takes time quadratic in the depth (">>>>…" 64 KiB deep takes seconds),
	// and every writer walks the blocks recursively.
	maxNesting = 32
	// maxParseSteps bounds the calls goldmark makes to its block and inline parsers (and to the
	// emphasis matching): real documents take half a step per byte at most.
	maxParseSteps = 4 * MaxInputBytes
	// maxInlineNodes bounds the inline nodes (links, emphasis, code spans, openers waiting for
	// their closers…) of a parse, and so its memory (a few hundred bytes a node): real
	// documents make one every ten bytes or so; a text of nothing but "[" makes one per byte.
	maxInlineNodes = MaxInputBytes / 2
	// workPerByte bounds the bytes the inline parsers scan, per byte of input: a parse reads
	// each byte a few times, and backtracks over a few more; one that rescans the same text over
	// and over (the quadratic cases) runs out.
	workPerByte = 64
	// minWork is the work every parse may do, however short its input.
	minWork = 1 << 20
	// maxParseTime bounds a parse whatever its work, for the quadratic paths the counts miss.
	// A megabyte of real Markdown parses in well under a second.
	maxParseTime = 5 * time.Second
	// stepsPerCheck is how often the context is checked, in steps.
	stepsPerCheck = 64
)

// errTooComplex: the parse took more steps, nodes, work or time than it may.
var errTooComplex = errors.New("the Markdown text is too complex to convert (too many links, emphasis marks or other inline markup)")

// budgetKey holds a parse's *budget in goldmark's parse context.
var budgetKey = parser.NewContextKey()

// budget is the work a parse may still do. goldmark's parser cannot be cancelled and has inputs
// on which it takes quadratic time (unclosed link destinations such as "[a](" repeated: a
// megabyte of them takes minutes), so every parser it calls is wrapped to charge a step here,
// the inline parsers read through a reader that charges the bytes they scan, and a parse that
// runs out of steps, of work or of time is abandoned by a panic that parseMarkdown recovers.
type budget struct {
	ctx   context.Context
	steps int
	nodes int
	cells int
	work  int
	// maxWork is the bytes the inline parsers may scan.
	maxWork int
}

// abort is the panic that ends a parse that ran out of budget.
type abort struct{ err error }

// charge takes one step.
func (b *budget) charge() {
	b.steps++
	if b.steps > maxParseSteps {
		panic(abort{errTooComplex})
	}
	if b.steps%stepsPerCheck == 0 {
		if err := b.ctx.Err(); err != nil {
			panic(abort{err})
		}
	}
}

// scan charges n bytes scanned.
func (b *budget) scan(n int) {
	b.work += n
	if b.work > b.maxWork {
		panic(abort{errTooComplex})
	}
}

// chargeIn charges the budget of the parse pc belongs to.
func chargeIn(pc parser.Context) {
	if b, ok := pc.Get(budgetKey).(*budget); ok {
		b.charge()
	}
}

// mdParser is goldmark's CommonMark parser (its default parsers, at their default priorities) with
// GitHub's extensions (tables, strikethrough, task lists, autolinks), every part of it wrapped to
// charge a budget.
var mdParser = sync.OnceValue(func() parser.Parser {
	var blocks []util.PrioritizedValue
	for _, b := range []struct {
		parser   parser.BlockParser
		priority int
		nests    int // the levels a block of the parser opens: a list and its item, a quote
	}{
		{parser.NewSetextHeadingParser(), 100, 0},
		{parser.NewThematicBreakParser(), 200, 0},
		{parser.NewListParser(), 300, 2},
		{parser.NewListItemParser(), 400, 0},
		{parser.NewCodeBlockParser(), 500, 0},
		{parser.NewATXHeadingParser(), 600, 0},
		{parser.NewFencedCodeBlockParser(), 700, 0},
		{parser.NewBlockquoteParser(), 800, 1},
		{parser.NewHTMLBlockParser(), 900, 0},
		{parser.NewParagraphParser(), 1000, 0},
	} {
		blocks = append(blocks, util.Prioritized(&guardedBlock{BlockParser: b.parser, nests: b.nests}, b.priority))
	}
	link := parser.NewLinkParser()
	inlines := []util.PrioritizedValue{
		util.Prioritized(parser.NewCodeSpanParser(), 100),
		util.Prioritized(link, 200),
		util.Prioritized(parser.NewAutoLinkParser(), 300),
		util.Prioritized(parser.NewRawHTMLParser(), 400),
		util.Prioritized(parser.NewEmphasisParser(), 500),
		// GitHub's extensions, at the priorities goldmark's extenders give them.
		util.Prioritized(extension.NewStrikethroughParser(), 500),
		util.Prioritized(extension.NewTaskCheckBoxParser(), 0),
		util.Prioritized(extension.NewLinkifyParser(), 999),
	}
	for i, v := range inlines {
		ip := v.Value.(parser.InlineParser)
		g := &guardedInline{InlineParser: ip, link: ip == link}
		if cb, ok := g.InlineParser.(parser.CloseBlocker); ok {
			inlines[i] = util.Prioritized(&guardedCloser{guardedInline: g, closer: cb}, v.Priority)
		} else {
			inlines[i] = util.Prioritized(g, v.Priority)
		}
	}
	paragraphs := []util.PrioritizedValue{
		util.Prioritized(&guardedParagraph{ParagraphTransformer: parser.LinkReferenceParagraphTransformer}, 100),
		util.Prioritized(&guardedParagraph{ParagraphTransformer: extension.NewTableParagraphTransformer(), table: true}, 200),
	}
	return parser.NewParser(parser.WithBlockParsers(blocks...), parser.WithInlineParsers(inlines...),
		parser.WithParagraphTransformers(paragraphs...),
		parser.WithASTTransformers(util.Prioritized(extension.NewTableASTTransformer(), 0)))
})

// parseMarkdown parses src within ctx and the parse bounds.
func parseMarkdown(ctx context.Context, src []byte) (root ast.Node, err error) {
	parseCtx, cancel := context.WithTimeout(ctx, maxParseTime)
	defer cancel()
	pc := parser.NewContext()
	pc.Set(budgetKey, &budget{ctx: parseCtx, maxWork: minWork + workPerByte*len(src)})
	defer func() {
		switch r := recover().(type) {
		case nil:
		case abort:
			root, err = nil, r.err
			if parseCtx.Err() != nil && ctx.Err() == nil {
				err = errTooComplex // the parse's own time ran out
			}
		default:
			// A bug in the parser must not take the server down; the fuzz test looks for them.
			root, err = nil, fmt.Errorf("the Markdown text could not be parsed: %v", r)
		}
	}()
	return mdParser().Parse(text.NewReader(src), parser.WithContext(pc)), nil
}

// guardedBlock is a block parser that charges the budget and refuses to nest deeper than
// maxNesting.
type guardedBlock struct {
	parser.BlockParser
	// nests is how many levels a block of this parser opens (0: it does not nest).
	nests int
}

// Open opens a block unless it would nest too deep.
func (g *guardedBlock) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	chargeIn(pc)
	if g.nests > 0 && depth(parent)+g.nests > maxNesting {
		return nil, parser.NoChildren
	}
	return g.BlockParser.Open(parent, reader, pc)
}

// Continue continues a block.
func (g *guardedBlock) Continue(node ast.Node, reader text.Reader, pc parser.Context) parser.State {
	chargeIn(pc)
	return g.BlockParser.Continue(node, reader, pc)
}

// depth is how many containers hold n (the document counts).
func depth(n ast.Node) int {
	d := 0
	for ; n != nil; n = n.Parent() {
		d++
	}
	return d
}

// guardedInline is an inline parser that charges the budget, and makes the delimiters it
// opens (emphasis, strikethrough) charge it while they are matched, the other quadratic step.
type guardedInline struct {
	parser.InlineParser
	// link: this is the link parser, which scans for the end of a "<destination>" without
	// moving the reader, to the end of the line when there is none, and again from the next "(".
	link bool
}

// Parse parses an inline.
func (g *guardedInline) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	b, ok := pc.Get(budgetKey).(*budget)
	if !ok {
		return g.InlineParser.Parse(parent, block, pc)
	}
	b.charge()
	if g.link {
		line, _ := block.PeekLine()
		b.scan(destinationScan(line))
	}
	n := g.InlineParser.Parse(parent, &meteredReader{Reader: block, budget: b}, pc)
	if n == nil {
		return nil
	}
	if b.nodes++; b.nodes > maxInlineNodes {
		panic(abort{errTooComplex})
	}
	if d, ok := n.(*parser.Delimiter); ok && d.Processor != nil {
		d.Processor = &guardedDelimiters{DelimiterProcessor: d.Processor, budget: b}
	}
	return n
}

// destinationScan is how far the link parser scans a line that starts with "](<" (spaces may
// come before the "<"): to the ">" that ends the destination, or to the end of the line.
func destinationScan(line []byte) int {
	rest, ok := bytes.CutPrefix(line, []byte("]("))
	if !ok {
		return 0
	}
	rest = bytes.TrimLeft(rest, " \t")
	if len(rest) == 0 || rest[0] != '<' {
		return 0
	}
	if i := bytes.IndexByte(rest, '>'); i >= 0 {
		return i
	}
	return len(rest)
}

// guardedCloser is a guarded inline parser that cleans up at the end of each block (the link
// parser), which goldmark asks of the parsers that implement parser.CloseBlocker.
type guardedCloser struct {
	*guardedInline
	closer parser.CloseBlocker
}

// CloseBlock lets the parser clean up at the end of a block.
func (g *guardedCloser) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	g.closer.CloseBlock(parent, block, pc)
}

// guardedDelimiters is a delimiter processor that charges the budget for each opener a closer
// is tried with.
type guardedDelimiters struct {
	parser.DelimiterProcessor
	budget *budget
}

// CanOpenCloser tries an opener with a closer.
func (g *guardedDelimiters) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	g.budget.charge()
	return g.DelimiterProcessor.CanOpenCloser(opener, closer)
}

// guardedParagraph is a paragraph transformer (tables, link reference definitions) that charges
// the budget.
type guardedParagraph struct {
	parser.ParagraphTransformer
	// table: this is the table transformer, which makes every row as wide as the header row, so
	// the cells of the table it would make are counted first.
	table bool
}

// Transform transforms a paragraph.
func (g *guardedParagraph) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	b, ok := pc.Get(budgetKey).(*budget)
	if !ok {
		g.ParagraphTransformer.Transform(node, reader, pc)
		return
	}
	b.charge()
	if g.table {
		if b.cells += tableCells(node.Lines(), reader.Source()); b.cells > maxTableCells {
			panic(abort{errTooManyCells})
		}
	}
	g.ParagraphTransformer.Transform(node, reader, pc)
}

// tableCells is how many cells the table in a paragraph's lines would have once each row is as
// wide as the header: the width of its delimiter row (the first line after the first that is
// one, such as "|---|:-:|") times the header and the lines after it; 0 without one.
func tableCells(lines *text.Segments, source []byte) int {
	for i := 1; i < lines.Len(); i++ {
		seg := lines.At(i)
		if width := delimiterRow(seg.Value(source)); width > 0 {
			return width * (lines.Len() - i)
		}
	}
	return 0
}

// delimiterRow is the number of columns of a table's delimiter row, 0 if line is not one.
func delimiterRow(line []byte) int {
	line = bytes.TrimSpace(line)
	line = bytes.TrimPrefix(line, []byte("|"))
	line = bytes.TrimSuffix(line, []byte("|"))
	if len(line) == 0 {
		return 0
	}
	columns := 0
	for cell := range bytes.SplitSeq(line, []byte("|")) {
		cell = bytes.TrimSpace(cell)
		cell = bytes.TrimPrefix(cell, []byte(":"))
		cell = bytes.TrimSuffix(cell, []byte(":"))
		if len(cell) == 0 || len(bytes.Trim(cell, "-")) != 0 {
			return 0
		}
		columns++
	}
	return columns
}

// meteredReader is the reader of an inline parser, charging the bytes it moves over: the
// quadratic inline cases scan ahead, fail, go back and scan again.
type meteredReader struct {
	text.Reader
	budget *budget
}

// Value returns the text of a segment. goldmark's block reader looks for the segment's line
// from the block's last line back, so the lines after the position are charged: a paragraph of
// many lines with a link label on each takes time quadratic in its lines. They are counted by
// reading them, which costs what Value costs.
func (r *meteredReader) Value(seg text.Segment) []byte {
	r.budget.scan(r.linesLeft())
	return r.Reader.Value(seg)
}

// linesLeft counts the lines of the block after the position.
func (r *meteredReader) linesLeft() int {
	line, pos := r.Reader.Position()
	n := 0
	for {
		if bs, _ := r.Reader.PeekLine(); bs == nil {
			break
		}
		r.Reader.AdvanceLine()
		n++
	}
	r.Reader.SetPosition(line, pos)
	return n
}

// Advance moves n bytes on.
func (r *meteredReader) Advance(n int) {
	r.budget.scan(n)
	r.Reader.Advance(n)
}

// AdvanceAndSetPadding moves n bytes on.
func (r *meteredReader) AdvanceAndSetPadding(n, padding int) {
	r.budget.scan(n)
	r.Reader.AdvanceAndSetPadding(n, padding)
}

// AdvanceLine moves to the next line.
func (r *meteredReader) AdvanceLine() {
	line, _ := r.Reader.PeekLine()
	r.budget.scan(len(line))
	r.Reader.AdvanceLine()
}

// AdvanceToEOL moves to the end of the line.
func (r *meteredReader) AdvanceToEOL() {
	line, _ := r.Reader.PeekLine()
	r.budget.scan(len(line))
	r.Reader.AdvanceToEOL()
}

// FindClosure finds the closer of an opener; it scans up to the end of the block when there is
// none, which is charged by reading the rest of the block again.
func (r *meteredReader) FindClosure(opener, closer byte, options text.FindClosureOptions) (*text.Segments, bool) {
	segments, found := r.Reader.FindClosure(opener, closer, options)
	if found {
		for i := 0; i < segments.Len(); i++ {
			seg := segments.At(i)
			r.budget.scan(seg.Len())
		}
		return segments, found
	}
	line, pos := r.Reader.Position()
	for {
		bs, _ := r.Reader.PeekLine()
		if bs == nil {
			break
		}
		r.budget.scan(len(bs))
		r.Reader.AdvanceLine()
	}
	r.Reader.SetPosition(line, pos)
	return segments, found
}
