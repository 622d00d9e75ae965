"""autograd.wrap_util.unary_to_nary: a plain Python helper (no tracing), written again."""


def unary_to_nary(unary_operator):
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        def nary_f(*args, **kwargs):
            def unary_f(x):
                sub = list(args)
                if isinstance(argnum, int):
                    sub[argnum] = x
                else:
                    for i, xi in zip(argnum, x):
                        sub[i] = xi
                return fun(*sub, **kwargs)
            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, x, *op_args, **op_kwargs)
        return nary_f
    return nary_operator
