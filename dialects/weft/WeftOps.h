//===- WeftOps.h - Ops of the weft graph dialect ------------------*- C++
//-*-===//
#ifndef WEFT_DIALECTS_WEFT_WEFTOPS_H
#define WEFT_DIALECTS_WEFT_WEFTOPS_H

#include "dialects/weft/WeftDialect.h"

#define GET_OP_CLASSES
#include "dialects/weft/WeftOps.h.inc"

#endif // WEFT_DIALECTS_WEFT_WEFTOPS_H
