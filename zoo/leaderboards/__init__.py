"""Every region-word model and baseline on the same splits: the driver and its tables and figure (``board``;
``zoo.leaderboard(...)`` is ``board.leaderboard``), the MSRC and Corel5k scoring (``msrc``, ``corel5k``), the
methods (``methods``), the field's baselines (``baselines``) and the report of before/after pairs (``report``).
"""
