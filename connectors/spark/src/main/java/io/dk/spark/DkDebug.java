package io.dk.spark;

/** Diagnostics for tests: native memory held by split reads in this JVM. */
public final class DkDebug {
  private DkDebug() {}

  public static long nativeBytesOutstanding() {
    DkNative.ensureLoaded();
    return DkNative.nativeBytesOutstanding();
  }

  public static long nativeAllocations() {
    DkNative.ensureLoaded();
    return DkNative.nativeAllocations();
  }
}
