# Shader variants of the operator set v2 creation and layout operators: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
