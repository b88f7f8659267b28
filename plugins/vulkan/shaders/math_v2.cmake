# Shader variants of the operator set v2 math operators: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
