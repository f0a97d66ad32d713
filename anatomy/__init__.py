"""The app's logic without Gradio: models (registry), what visitors send (inputs), figures of a trace (views),
and the only calls into the Translator (engine). Importing it loads no model and starts no thread."""
