"""The reader: a multiple-choice cross-encoder that scores each answer choice from its facts."""
