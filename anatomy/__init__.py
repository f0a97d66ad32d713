"""The app's logic without Gradio: models (registry), what visitors send (inputs), figures of a trace and a model
(views, and one *_views module per family), and the only calls into the Translator (engine). Importing it loads no
model and starts no thread."""
