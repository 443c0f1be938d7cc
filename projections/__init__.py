"""Read models: pure folds from events to row changes, plus one thin writer."""
