//===- Version.h - weft's version
//------------------------------------------===//
#ifndef WEFT_RUNTIME_VERSION_H
#define WEFT_RUNTIME_VERSION_H

#define WEFT_VERSION_STRING "0.1.0"

#endif // WEFT_RUNTIME_VERSION_H
