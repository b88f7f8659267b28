# Shader variants of the gradients of the normalizations, conv2d, pooling and attention: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
