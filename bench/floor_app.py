"""The least a Streamlit page costs on this machine: bench/bench_app.py times this app the way it times the
dashboard (start → rendered, a precision change), so its figures show which part of the dashboard's is
Streamlit and the browser, and which part is ours. One sidebar selectbox bound to the URL, a title, a
caption, one metric and a 10-row table; no data is read."""
import streamlit as st

PRECISIONS = ["bf16", "bf16+hps", "fp16", "fp32"]

st.set_page_config(page_title="Streamlit floor", layout="wide")
if "prec" not in st.session_state:  # a new session starts from the URL
    asked = st.query_params.get("prec")
    st.session_state["prec"] = asked if asked in PRECISIONS else "fp32"
precision = st.sidebar.selectbox("Precision", PRECISIONS, key="prec")
if st.query_params.get("prec") != precision:  # as the dashboard's ui/state.py writes the URL
    st.query_params.from_dict({"prec": precision})
st.title("Streamlit floor")
st.caption("A minimal page: what Streamlit and the browser cost before any app work.")
st.metric("Top G", f"{0.5 + PRECISIONS.index(precision) / 100:.4f}")
st.dataframe({"system": [f"system-{i}" for i in range(10)], "G": [i / 10 for i in range(10)]})
