"""Transformer Anatomy: a web app that shows the paper's Transformer translating, from inside."""
from __future__ import annotations

import gradio as gr

demo = gr.Blocks(title="Transformer Anatomy")
with demo:
    gr.Markdown("# Transformer Anatomy\nThe app is being built; see README.md.")

if __name__ == "__main__":
    demo.launch()
