// Idl.g4: the grammar of Ninf and Ninf-G IDL (see docs/idl.md). idlc builds an AST
// from this parse tree; every check that is not syntax lives in idlc/src/sema.cpp so
// that the parser stays permissive and the errors stay readable.
grammar Idl;

// DefClass's body is braces around IDL, not C: the '{' after a DefClass header is a
// token of its own (CLASS_OPEN) instead of the start of a C block, and its '}' is
// CLASS_CLOSE. Inside, DefState and method bodies are C blocks again. The predicates
// come after the '{', never first: a predicate at the start of a rule is part of every
// token's start state, which ANTLR then cannot keep in its DFA and recomputes from the
// ATN for each token (idlc's lexer was 10x slower so).
@lexer::header {
#include "cblock.h"
}

@lexer::members {
bool classPending = false;
idlc::CBlockScanner cblocks;

// The '{' of a C block was just matched: the token grows to its matching '}' (see
// cblock.h), or stays the one '{' as an ERROR_CHAR, which the parser reports with why.
void finishCBlock() {
    size_t open = tokenStartCharIndex;
    size_t after = _input->index();
    const auto &end = cblocks.end(open, tokenStartLine, tokenStartCharPositionInLine, [this, after](size_t i) {
        size_t c = _input->LA(static_cast<ssize_t>(i - after + 1));
        return c == static_cast<size_t>(-1) ? idlc::CBlockScanner::kEnd : static_cast<uint32_t>(c);
    });
    if (end.why != idlc::CBlockScanner::Why::Closed) {
        setType(ERROR_CHAR);
        return;
    }
    auto *sim = getInterpreter<antlr4::atn::LexerATNSimulator>();
    while (_input->index() < end.next)
        sim->consume(_input);
}
}

file : decl* EOF ;

decl
    : 'Module' name ';'                                   # ModuleDecl
    | optionKey STRING ';'                                # OptionDecl
    | 'Globals' CBLOCK ';'?                               # GlobalsDecl
    | 'Define' name '(' paramList? ')' description? ','? defOption* body   # DefineDecl
    | DEFCLASS name description? ','? defOption* CLASS_OPEN classItem* CLASS_CLOSE ';'?   # ClassDecl
    ;

// The members of a DefClass (Ninf-G remote objects): its state and its methods.
classItem
    : 'DefState' CBLOCK ';'?                                                   # StateItem
    | 'DefMethod' name '(' paramList? ')' description? ','? defOption* body    # MethodItem
    ;

// Adjacent strings join, as in C, so long descriptions can span lines.
description : STRING+ ;

optionKey : 'CompileOptions' | 'Library' | 'FortranFormat' | 'Compiler' | 'Linker' ;

paramList
    : VOID
    | param (',' param)*
    ;

// The last form is a client callback function (Ninf IDL): 'cb(IN double c[n], OUT
// double d[n])'; sema refuses callbacks inside callbacks. The two forms with an
// unknownWord take a misspelt type or mode ('IN dbl x', 'INN double x') so that sema
// can name the word and suggest the right one; the parser alone could only say that the
// declarator was unexpected. The unknown word may stand only last before the declarator
// or first before a known word: anywhere else ('IN int n IN double x', a missing ',') a
// name is more likely the previous parameter's, which a syntax error says better.
param
    : paramWord+ declarator
    | paramWord* unknownWord declarator
    | unknownWord paramWord+ declarator
    | name '(' paramList? ')'
    ;

unknownWord : ID ;

paramWord
    : MODE                      # ModeWord
    | typeWord                  # TypeWordAlt
    ;

typeWord
    : 'unsigned'? typeName
    ;

typeName : 'char' | 'short' | 'int' | 'long' | 'longlong' | 'float' | 'double'
         | 'scomplex' | 'dcomplex' | 'string' | 'filename' ;

declarator : STAR? name dimension* ;

dimension
    : '[' ']'                                                   # EmptyDim
    | '[' size=expr (':' start=expr (',' end=expr (',' step=expr)?)?)? ']'   # SizedDim
    ;

defOption
    : 'Required' STRING                                   # RequiredOpt
    | ('CalcOrder' | 'Complexity') expr                  # CostOpt
    | 'Backend' STRING                                    # BackendOpt
    | 'Shrink' STRING                                     # ShrinkOpt
    | 'Retry' STRING                                      # RetryOpt
    | 'Timeout' (INT | STRING)                            # TimeoutOpt
    | 'Language' STRING                                   # LanguageOpt
    ;

body
    : 'Calls' STRING name '(' (callArg (',' callArg)*)? ')' ';'   # CallsBody
    | CBLOCK ';'?                                                 # InlineBody
    ;

callArg : STAR? name | INT ;

expr
    : '(' expr ')'                                        # ParenExpr
    | name '(' expr (',' expr)* ')'                       # FuncExpr
    | op=('-' | '!' | '+') expr                           # UnaryExpr
    | <assoc=right> expr '^' expr                         # PowExpr
    | expr op=('*' | '/' | '%') expr                      # MulExpr
    | expr op=('+' | '-') expr                            # AddExpr
    | expr op=('<' | '<=' | '>' | '>=') expr              # RelExpr
    | expr op=('==' | '!=') expr                          # EqExpr
    | expr '&&' expr                                      # AndExpr
    | expr '||' expr                                      # OrExpr
    | <assoc=right> expr '?' expr ':' expr                # CondExpr
    | INT                                                 # IntExpr
    | name                                                # NameExpr
    ;

name : ID ;

DEFCLASS : 'DefClass' { classPending = true; } ;
CLASS_OPEN : '{' { classPending }? { classPending = false; } ;
CLASS_CLOSE : '}' ;

MODE : 'mode_in' | 'mode_out' | 'mode_inout' | 'mode_work'
     | 'IN' | 'OUT' | 'INOUT' | 'WORK' ;
VOID : 'void' ;
STAR : '*' ;
INT : [0-9]+ ;
ID : [A-Za-z_] [A-Za-z_0-9]* ;
STRING : '"' ( '\\' . | ~["\\\r\n] )* '"' ;

// A brace-balanced block of C text (Globals and inline bodies): its '{' here, the rest
// by finishCBlock. Strings, character literals and comments inside it may hold braces.
CBLOCK : '{' { !classPending }? { finishCBlock(); } ;

BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
LINE_COMMENT : '//' ~[\r\n]* -> channel(HIDDEN) ;
WS : [ \t\r\n\f]+ -> skip ;
// Anything else becomes a token the parser rejects with a readable message.
ERROR_CHAR : . ;
