// OpenCL on a device reached through a runner: what the device's OpenCL driver offers,
// asked through tt_remote's info request. tt_remote links nothing of OpenCL; the request
// carries a small "describe library" built with the device's compiler; the OpenCL target
// kind's record (engine/targets/opencl.ts, its runner.describe) builds it and reads the
// answer. Re-exported here for the remote code and its tests.

export { describedOpenclDevice, OPENCL_DESCRIBE_SYMBOL, openclDescribeLibrary } from '../targets/opencl';
