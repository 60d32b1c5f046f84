"""A trained model saved and opened: checkpoints `cgr train` wrote and the Hugging Face-style
model folders `cgr export` writes, with the rule for the file paths stored inside them."""
