"""ui.charts.draw_remembered (cheaper reruns): a figure is built once per key and drawn as it was
built; no key builds it every time; old keys are forgotten past REMEMBERED_FIGURES."""
import plotly.graph_objects as go

from ui import charts


def test_a_figure_is_built_once_per_key_and_never_changed_afterwards(monkeypatch):
    drawn, built = [], []
    monkeypatch.setattr(charts.drawing.st, "plotly_chart", lambda figure, **kwargs: drawn.append(figure))

    def build(y):
        built.append(y)
        return go.Figure(go.Bar(x=["a", "b"], y=[y, y + 1]))

    for _ in range(3):
        charts.draw_remembered(("test-fig", 1), lambda: build(1))
    charts.draw_remembered(("test-fig", 2), lambda: build(2))
    charts.draw_remembered(None, lambda: build(3))
    charts.draw_remembered(None, lambda: build(3))
    assert built == [1, 2, 3, 3]
    assert drawn[0] is drawn[1] is drawn[2] and drawn[3] is not drawn[0]
    assert list(drawn[0].data[0].y) == [1, 2] and list(drawn[3].data[0].y) == [2, 3]
    assert drawn[0].layout.legend.orientation == charts.LEGEND_ABOVE["orientation"]
    before = drawn[0].to_json()
    charts.draw_remembered(("test-fig", 1), lambda: build(99))
    assert drawn[-1].to_json() == before


def test_old_keys_are_forgotten(monkeypatch):
    monkeypatch.setattr(charts.drawing.st, "plotly_chart", lambda figure, **kwargs: None)
    built = []
    for i in range(charts.REMEMBERED_FIGURES + 5):
        charts.draw_remembered(("forget", i), lambda i=i: built.append(i) or go.Figure())
    charts.draw_remembered(("forget", 0), lambda: built.append("again") or go.Figure())
    assert built[-1] == "again" and len(charts._figures) <= charts.REMEMBERED_FIGURES
