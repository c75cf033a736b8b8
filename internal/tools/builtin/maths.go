package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tools"
)

// Bounds of the maths evaluator: an expression is evaluated while it is parsed, in one pass, so
// its work is linear in its length; the depth bound keeps the recursion small.
const (
	maxExprLen   = 1000
	maxExprDepth = 64
)

func mathsSpecs() []spec {
	return []spec{{
		provider: "maths", name: "eval_expression", label: "Evaluate Expression",
		description: "Evaluates an arithmetic expression: numbers, + - * / // % ** (or ^), parentheses, " +
			"the constants pi and e, and functions such as sqrt, abs, exp, log, log10, sin, cos, tan, arctan2, floor, ceil.",
		parameters: schema([]string{"expression"},
			[3]string{"expression", "string", "the expression, e.g. (2 + 3) * sqrt(16) / 2"}),
		run: func(_ context.Context, a args) (string, error) {
			s, err := a.required("expression")
			if err != nil {
				return "", err
			}
			v, err := evalExpression(s)
			if err != nil {
				return "", err
			}
			return formatNumber(v), nil
		},
	}}
}

// errExpression wraps what is wrong with an expression.
var errExpression = errors.New("invalid expression")

// evalExpression parses and evaluates an arithmetic expression. It runs no code: the grammar has
// numbers, the operators + - * / // % ** ^ (power), unary + and -, parentheses, the constants pi
// and e, and a fixed set of numeric functions.
func evalExpression(s string) (float64, error) {
	if len(s) > maxExprLen {
		return 0, fmt.Errorf("%w: %w: longer than %d characters", tools.ErrBadArguments, errExpression, maxExprLen)
	}
	p := &exprParser{src: s}
	p.next()
	v, err := p.expr(0)
	if err != nil {
		return 0, fmt.Errorf("%w: %w: %w", tools.ErrBadArguments, errExpression, err)
	}
	if p.tok.kind != tokEOF {
		return 0, fmt.Errorf("%w: %w: unexpected %q at offset %d", tools.ErrBadArguments, errExpression, p.tok.text, p.tok.pos)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %w: the result is not a finite number", tools.ErrBadArguments, errExpression)
	}
	return v, nil
}

// formatNumber spells a result: integral values without a fraction, others in the shortest form.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp
	tokLParen
	tokRParen
	tokComma
	tokBad
)

type token struct {
	kind tokKind
	text string
	pos  int
	num  float64
}

type exprParser struct {
	src   string
	pos   int
	tok   token
	depth int
}

func (p *exprParser) next() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(p.src) {
		p.tok = token{kind: tokEOF, text: "end", pos: start}
		return
	}
	c := p.src[p.pos]
	switch {
	case isDigit(c) || (c == '.' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1])):
		for p.pos < len(p.src) && (isDigit(p.src[p.pos]) || p.src[p.pos] == '.') {
			p.pos++
		}
		if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
			q := p.pos + 1
			if q < len(p.src) && (p.src[q] == '+' || p.src[q] == '-') {
				q++
			}
			if q < len(p.src) && isDigit(p.src[q]) {
				for q < len(p.src) && isDigit(p.src[q]) {
					q++
				}
				p.pos = q
			}
		}
		text := p.src[start:p.pos]
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			p.tok = token{kind: tokBad, text: text, pos: start}
			return
		}
		p.tok = token{kind: tokNum, text: text, pos: start, num: f}
	case isLetter(c):
		for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos])) {
			p.pos++
		}
		p.tok = token{kind: tokIdent, text: p.src[start:p.pos], pos: start}
	case c == '(':
		p.pos++
		p.tok = token{kind: tokLParen, text: "(", pos: start}
	case c == ')':
		p.pos++
		p.tok = token{kind: tokRParen, text: ")", pos: start}
	case c == ',':
		p.pos++
		p.tok = token{kind: tokComma, text: ",", pos: start}
	case strings.HasPrefix(p.src[p.pos:], "**"), strings.HasPrefix(p.src[p.pos:], "//"):
		p.pos += 2
		p.tok = token{kind: tokOp, text: p.src[start:p.pos], pos: start}
	case strings.IndexByte("+-*/%^", c) >= 0:
		p.pos++
		p.tok = token{kind: tokOp, text: string(c), pos: start}
	default:
		_, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		p.tok = token{kind: tokBad, text: p.src[start:p.pos], pos: start}
	}
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

// Binding powers: + - < * / // % < unary - < ** (right-associative).
const (
	precAdd   = 1
	precMul   = 2
	precUnary = 3
	precPow   = 4
)

func binaryPrec(op string) int {
	switch op {
	case "+", "-":
		return precAdd
	case "*", "/", "//", "%":
		return precMul
	case "**", "^":
		return precPow
	}
	return -1
}

func (p *exprParser) enter() error {
	p.depth++
	if p.depth > maxExprDepth {
		return fmt.Errorf("nested deeper than %d levels", maxExprDepth)
	}
	return nil
}

// expr parses operators binding at least as tightly as minPrec.
func (p *exprParser) expr(minPrec int) (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer func() { p.depth-- }()
	left, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.tok.kind == tokOp {
		op := p.tok.text
		prec := binaryPrec(op)
		if prec < minPrec {
			break
		}
		p.next()
		nextMin := prec + 1
		if prec == precPow {
			nextMin = precUnary // right-associative, and 2**-1 is allowed
		}
		right, err := p.expr(nextMin)
		if err != nil {
			return 0, err
		}
		if left, err = apply(op, left, right); err != nil {
			return 0, err
		}
	}
	return left, nil
}

func (p *exprParser) unary() (float64, error) {
	if p.tok.kind == tokOp && (p.tok.text == "-" || p.tok.text == "+") {
		neg := p.tok.text == "-"
		p.next()
		v, err := p.expr(precPow) // -2**2 is -(2**2)
		if err != nil {
			return 0, err
		}
		if neg {
			v = -v
		}
		return v, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (float64, error) {
	t := p.tok
	switch t.kind {
	case tokNum:
		p.next()
		return t.num, nil
	case tokLParen:
		p.next()
		v, err := p.expr(0)
		if err != nil {
			return 0, err
		}
		if p.tok.kind != tokRParen {
			return 0, fmt.Errorf("expected ) at offset %d", p.tok.pos)
		}
		p.next()
		return v, nil
	case tokIdent:
		p.next()
		name := strings.ToLower(t.text)
		if p.tok.kind != tokLParen {
			switch name {
			case "pi":
				return math.Pi, nil
			case "e":
				return math.E, nil
			}
			return 0, fmt.Errorf("unknown name %q", t.text)
		}
		f, ok := functions[name]
		if !ok {
			return 0, fmt.Errorf("unknown function %q", t.text)
		}
		p.next()
		var argv []float64
		for p.tok.kind != tokRParen {
			if len(argv) > 0 {
				if p.tok.kind != tokComma {
					return 0, fmt.Errorf("expected , or ) at offset %d", p.tok.pos)
				}
				p.next()
			}
			v, err := p.expr(0)
			if err != nil {
				return 0, err
			}
			argv = append(argv, v)
		}
		p.next()
		if len(argv) != f.arity {
			return 0, fmt.Errorf("%s takes %d argument(s), not %d", name, f.arity, len(argv))
		}
		return f.fn(argv), nil
	case tokEOF:
		return 0, errors.New("unexpected end")
	default:
		return 0, fmt.Errorf("unexpected %q at offset %d", t.text, t.pos)
	}
}

func apply(op string, a, b float64) (float64, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/", "//", "%":
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		switch op {
		case "/":
			return a / b, nil
		case "//":
			return math.Floor(a / b), nil
		default: // the sign of the divisor, as in Python
			m := math.Mod(a, b)
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m, nil
		}
	default: // ** and ^
		return math.Pow(a, b), nil
	}
}

type function struct {
	arity int
	fn    func([]float64) float64
}

func unaryFn(f func(float64) float64) function {
	return function{1, func(x []float64) float64 { return f(x[0]) }}
}

// functions are numexpr's numeric functions, with the usual short aliases.
var functions = map[string]function{
	"sqrt": unaryFn(math.Sqrt), "abs": unaryFn(math.Abs), "exp": unaryFn(math.Exp),
	"expm1": unaryFn(math.Expm1), "log": unaryFn(math.Log), "ln": unaryFn(math.Log),
	"log10": unaryFn(math.Log10), "log2": unaryFn(math.Log2), "log1p": unaryFn(math.Log1p),
	"sin": unaryFn(math.Sin), "cos": unaryFn(math.Cos), "tan": unaryFn(math.Tan),
	"arcsin": unaryFn(math.Asin), "arccos": unaryFn(math.Acos), "arctan": unaryFn(math.Atan),
	"asin": unaryFn(math.Asin), "acos": unaryFn(math.Acos), "atan": unaryFn(math.Atan),
	"sinh": unaryFn(math.Sinh), "cosh": unaryFn(math.Cosh), "tanh": unaryFn(math.Tanh),
	"arcsinh": unaryFn(math.Asinh), "arccosh": unaryFn(math.Acosh), "arctanh": unaryFn(math.Atanh),
	"floor": unaryFn(math.Floor), "ceil": unaryFn(math.Ceil), "round": unaryFn(math.RoundToEven),
	"arctan2": {2, func(x []float64) float64 { return math.Atan2(x[0], x[1]) }},
	"atan2":   {2, func(x []float64) float64 { return math.Atan2(x[0], x[1]) }},
	"pow":     {2, func(x []float64) float64 { return math.Pow(x[0], x[1]) }},
}
