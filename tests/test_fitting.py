"""cgr.fitting: the progress line of a fit whose output goes to a file."""


def test_progress_log_writes_a_line_when_no_bar_is_drawn(tmp_path, caplog, monkeypatch):
    """A real (tiny) Lightning fit with the bar off, as the benchmarks and a job writing to a
    file run: the callback says where the epoch stands; with a bar on a terminal it is quiet."""
    import logging

    import pytorch_lightning as pl
    from pytorch_lightning.demos.boring_classes import BoringModel

    from cgr.fitting import ProgressLog

    def fit(progress_bar: bool) -> list[str]:
        caplog.clear()
        trainer = pl.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=0,
                             enable_progress_bar=progress_bar, enable_checkpointing=False,
                             logger=False, enable_model_summary=False, accelerator="cpu",
                             callbacks=[ProgressLog(every_s=0)], default_root_dir=tmp_path)  # fmt: skip
        with caplog.at_level(logging.INFO, logger="cgr.fitting"):
            trainer.fit(BoringModel())
        return [r.getMessage() for r in caplog.records if r.name == "cgr.fitting"]

    lines = fit(progress_bar=False)
    assert lines[-1].startswith("epoch 0: batch 4/4,") and "loss" in lines[-1], lines
    assert len(lines) == 4
    assert len(fit(progress_bar=True)) == 4  # the bar goes to a file here (pytest captures it)
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert fit(progress_bar=True) == []  # the bar is drawn on a terminal: no second report
