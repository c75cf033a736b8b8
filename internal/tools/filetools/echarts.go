package filetools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/internal/tools"
)

// The tools of langgenius/echarts (Dify's official plugin, read at its version 0.0.4): each
// builds an ECharts option from ";"-separated text and answers it as a Markdown ```echarts
// block, which Dify's chat renders as a chart. The option is written as the plugin writes it
// (json.dumps with indent=2, ensure_ascii=False), members in its order.
const (
	echartsPlugin   = "langgenius/echarts/echarts"
	echartsProvider = "echarts"
)

// maxChartItems bounds the values of one chart.
const maxChartItems = 100_000

var (
	titleParam = param{name: "title", description: "chart title", required: true}
	dataParam  = param{name: "data", required: true,
		description: `data for generating chart, data should be a string contains a list of numbers like "1;2;3;4;5"`}
)

var echartsSpecs = []spec{
	{plugin: echartsPlugin, provider: echartsProvider, name: "bar_chart", label: "Bar Chart",
		description: "generate a bar chart with input data", run: axisChart("bar"),
		params: []param{titleParam, dataParam, {name: "x_axis", required: true,
			description: `x axis for bar chart, x axis should be a string contains a list of texts like "a;b;c;1;2" in order to match the data`}}},
	{plugin: echartsPlugin, provider: echartsProvider, name: "line_chart", label: "Linear Chart",
		description: "generate a linear chart with input data", run: axisChart("line"),
		params: []param{titleParam, dataParam, {name: "x_axis", required: true,
			description: `x axis for linear chart, x axis should be a string contains a list of texts like "a;b;c;1;2" in order to match the data`}}},
	{plugin: echartsPlugin, provider: echartsProvider, name: "pie_chart", label: "Pie Chart",
		description: "generate a pie chart with input data", run: pieChart,
		params: []param{titleParam, dataParam, {name: "categories", required: true,
			description: `categories for pie chart, categories should be a string contains a list of texts like "a;b;c;1;2" in order to match the data, each category should be split by ";"`}}},
}

// axisChart is bar_chart or line_chart: the values of data over the labels of x_axis.
func axisChart(series string) func(context.Context, *Set, args) tools.Result {
	return func(_ context.Context, s *Set, a args) tools.Result {
		title, labels, values, prefix, refused := chartInput(s, a, "x_axis")
		if refused != nil {
			return *refused
		}
		option := jsonObject{
			{"title", jsonObject{{"left", "center"}, {"text", title}}},
			{"tooltip", jsonObject{{"trigger", "axis"}, {"axisPointer", jsonObject{{"type", "cross"}}}}},
			{"xAxis", jsonObject{{"type", "category"}, {"data", labels}}},
			{"yAxis", jsonObject{{"type", "value"}}},
			// The plugin sets smooth on bars too; ECharts ignores it there.
			{"series", []any{jsonObject{{"data", values}, {"type", series}, {"smooth", true}}}},
		}
		return s.chartAnswer(prefix, option)
	}
}

// pieChart is pie_chart: a slice per value of data, named by the category of the same rank
// (values or categories without a partner are left out, as Python's zip leaves them).
func pieChart(_ context.Context, s *Set, a args) tools.Result {
	title, categories, values, prefix, refused := chartInput(s, a, "categories")
	if refused != nil {
		return *refused
	}
	slices := make([]any, 0, min(len(values), len(categories)))
	for i := range min(len(values), len(categories)) {
		slices = append(slices, jsonObject{{"value", values[i]}, {"name", categories[i]}})
	}
	option := jsonObject{
		{"title", jsonObject{{"left", "center"}, {"text", title}}},
		{"tooltip", jsonObject{{"trigger", "item"}}},
		{"legend", jsonObject{{"orient", "vertical"}, {"left", "left"}}},
		{"series", []any{jsonObject{{"type", "pie"}, {"data", slices}}}},
	}
	return s.chartAnswer(prefix, option)
}

// chartInput reads a chart's title, its labels (the parameter labelParam split at ";") and its
// values. A missing label text is not an error: the plugin answers "Please input x_axis" (or
// categories) followed by the chart with one empty label, and so does this; prefix is that
// message, which the answer starts with.
func chartInput(s *Set, a args, labelParam string) (title string, labels, values []any, prefix string, refused *tools.Result) {
	refuse := func(format string, v ...any) (string, []any, []any, string, *tools.Result) {
		r := failed(format, v...)
		return "", nil, nil, "", &r
	}
	for _, name := range []string{"title", "data", labelParam} {
		if n := len(a.text(name)); n > s.o.MaxTextBytes {
			return refuse("%s is %d bytes; this server takes at most %d", name, n, s.o.MaxTextBytes)
		}
	}
	labelText, dataText := a.text(labelParam), a.text("data")
	if dataText == "" {
		return refuse("Please input data")
	}
	if labelText == "" {
		prefix = "Please input " + labelParam
	}
	if strings.Count(dataText, ";") >= maxChartItems || strings.Count(labelText, ";") >= maxChartItems {
		return refuse("a chart takes at most %d values on this server", maxChartItems)
	}
	values, err := chartValues(dataText)
	if err != nil {
		return refuse("%v", err)
	}
	for l := range strings.SplitSeq(labelText, ";") {
		labels = append(labels, l)
	}
	return a.text("title"), labels, values, prefix, nil
}

// chartValues reads the values of data as the plugin does: integers when every value is a run
// of digits, else floats as Python's float() reads them ("1.5", " 2 ", "1e3", "1_000").
// Infinities and NaN, which Python would write as the invalid JSON Infinity and NaN, are
// refused.
func chartValues(data string) ([]any, error) {
	parts := strings.Split(data, ";")
	values := make([]any, len(parts))
	if allDigits(parts) {
		for i, p := range parts {
			values[i] = pyNumber(p)
			if n, ok := pyInt(p); ok {
				values[i] = pyNumber(n)
			}
		}
		return values, nil
	}
	for i, p := range parts {
		f, ok := pyFloat(p)
		if !ok {
			return nil, fmt.Errorf("could not convert string to float: '%s'", p)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("the value '%s' is not a number JSON can hold", p)
		}
		values[i] = pyNumber(pyFloatRepr(f))
	}
	return values, nil
}

// allDigits reports whether every part is a non-empty run of decimal digits, any script's, as
// Python's isdigit (which also takes the superscripts, which int() then refuses; here they are
// not digits, and float() refuses them).
func allDigits(parts []string) bool {
	for _, p := range parts {
		if p == "" || strings.IndexFunc(p, func(r rune) bool { return !unicode.IsDigit(r) }) >= 0 {
			return false
		}
	}
	return true
}

// chartAnswer is the option in an ```echarts block, after prefix when there is one.
func (s *Set) chartAnswer(prefix string, option jsonObject) tools.Result {
	w := &jsonWriter{style: pythonIndented, max: s.o.MaxOutputBytes}
	if err := w.write(option); err != nil {
		return failed("the chart's option is over %d bytes, the most this server writes", s.o.MaxOutputBytes)
	}
	return tools.Result{Text: prefix + "```echarts\n" + string(w.buf) + "\n```"}
}
