//===- BufferizableOpInterfaceImpl.h - Bufferization of flash ---*- C++ -*-===//
//
// Attaches BufferizableOpInterface to the destination-style flash ops.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define FLASHC_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace flash {
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace flash
} // namespace mlir

#endif // FLASHC_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
