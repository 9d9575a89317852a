"""Yakhnenko & Honavar's multimodal topic models: coordinate-ascent VI for MoM-LDA (``topic_vi``), stick-breaking
VI for MoM-HDP (``stick_breaking_vi``) and stochastic VI over minibatches (``streaming``)."""
