//! RQL: lexer, parser, AST. Pure: no I/O.
