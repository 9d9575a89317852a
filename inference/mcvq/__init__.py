"""Ross 2003's multiple cause vector quantization: the E/M steps (``steps``) and the variational EM loop
(``variational_em``)."""
