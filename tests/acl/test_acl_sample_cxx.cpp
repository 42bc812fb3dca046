// SPDX-License-Identifier: Apache-2.0
// A program written the way CANN's adump samples are (C++, std::vector, scoped enum names,
// aclInit/aclrtSetDevice/aclrtCreateStream, aclnnAdd, a chunk callback, aclmdl*Dump, the
// exception API), built against adump's public headers and libadump only. It must compile
// unchanged and pass.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include "acl/acl.h"
#include "acl/acl_dump.h"
#include "aclnnop/aclnn_add.h"

#define LOG_INFO(fmt, args...) fprintf(stdout, "[INFO]  " fmt "\n", ##args)
#define LOG_ERROR(fmt, args...) fprintf(stdout, "[ERROR]  " fmt "\n", ##args)
#define CHECK_RET(call)                                                                   \
    do {                                                                                  \
        aclError r_ = (call);                                                             \
        if (r_ != ACL_SUCCESS) {                                                          \
            LOG_ERROR("%s returned %d", #call, static_cast<int32_t>(r_));                 \
            return -1;                                                                    \
        }                                                                                 \
    } while (0)

namespace {
std::mutex gMutex;
std::map<std::string, std::vector<uint8_t>> gFiles;
int32_t gLastChunks = 0;

int32_t OnChunk(const acldumpChunk* data, int32_t len)
{
    if (data == nullptr || sizeof(acldumpChunk) + data->bufLen != static_cast<size_t>(len)) {
        return -1;
    }
    std::lock_guard<std::mutex> lock(gMutex);
    auto& bytes = gFiles[data->fileName];
    bytes.insert(bytes.end(), data->dataBuf, data->dataBuf + data->bufLen);
    gLastChunks += static_cast<int32_t>(data->isLastChunk);
    return 0;
}

int64_t ShapeSize(const std::vector<int64_t>& shape)
{
    int64_t n = 1;
    for (const int64_t d : shape) {
        n *= d;
    }
    return n;
}

template <typename T>
int MakeTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, void** dev, aclDataType type,
    aclTensor** tensor)
{
    const size_t size = static_cast<size_t>(ShapeSize(shape)) * sizeof(T);
    CHECK_RET(aclrtMalloc(dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_RET(aclrtMemcpy(*dev, size, host.data(), size, ACL_MEMCPY_HOST_TO_DEVICE));
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
        strides[i] = shape[i + 1] * strides[i + 1];
    }
    *tensor = aclCreateTensor(shape.data(), shape.size(), type, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
        shape.data(), shape.size(), *dev);
    return *tensor == nullptr ? -1 : 0;
}
} // namespace

int main()
{
    int32_t deviceId = 0;
    aclrtStream stream = nullptr;
    CHECK_RET(aclInit("./acl.json"));
    CHECK_RET(aclrtSetDevice(deviceId));
    CHECK_RET(aclrtCreateStream(&stream));
    CHECK_RET(acldumpRegCallback(OnChunk, 0));
    const char* dumpPath = acldumpGetPath(DATA_DUMP);
    LOG_INFO("dump path %s", dumpPath != nullptr ? dumpPath : "(null)");

    std::vector<int64_t> shape{4, 2};
    std::vector<float> selfHost = {0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<float> otherHost = {1, 1, 1, 2, 2, 2, 3, 3};
    std::vector<float> outHost(8, 0.0f);
    void* selfDev = nullptr;
    void* otherDev = nullptr;
    void* outDev = nullptr;
    aclTensor* self = nullptr;
    aclTensor* other = nullptr;
    aclTensor* out = nullptr;
    float alphaValue = 1.0f;
    if (MakeTensor(selfHost, shape, &selfDev, aclDataType::ACL_FLOAT, &self) != 0 ||
        MakeTensor(otherHost, shape, &otherDev, aclDataType::ACL_FLOAT, &other) != 0 ||
        MakeTensor(outHost, shape, &outDev, aclDataType::ACL_FLOAT, &out) != 0) {
        return -1;
    }
    aclScalar* alpha = aclCreateScalar(&alphaValue, aclDataType::ACL_FLOAT);
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor;
    CHECK_RET(aclnnAddGetWorkspaceSize(self, other, alpha, out, &workspaceSize, &executor));
    void* workspaceAddr = nullptr;
    if (workspaceSize > 0lu) {
        CHECK_RET(aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    }
    CHECK_RET(aclnnAdd(workspaceAddr, workspaceSize, executor, stream));
    CHECK_RET(aclrtSynchronizeStream(stream));

    std::vector<float> result(8, 0.0f);
    CHECK_RET(aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), outDev, 8 * sizeof(float),
        ACL_MEMCPY_DEVICE_TO_HOST));
    {
        std::lock_guard<std::mutex> lock(gMutex);
        if (result[0] != 1.0f || gFiles.size() != 1 || gLastChunks != 1) {
            LOG_ERROR("result[0]=%f files=%zu last chunks=%d", result[0], gFiles.size(), gLastChunks);
            return -1;
        }
        // dump_mode defaults to output: the reassembled file ends with the result tensor.
        const auto& bytes = gFiles.begin()->second;
        if (bytes.size() < 32 || std::memcmp(bytes.data() + bytes.size() - 32, result.data(), 32) != 0) {
            LOG_ERROR("callback bytes do not end with the output tensor");
            return -1;
        }
    }
    acldumpUnregCallback();
    aclDestroyTensor(self);
    aclDestroyTensor(other);
    aclDestroyTensor(out);
    aclDestroyScalar(alpha);
    CHECK_RET(aclrtFree(selfDev));
    CHECK_RET(aclrtFree(otherDev));
    CHECK_RET(aclrtFree(outDev));
    CHECK_RET(aclrtDestroyStream(stream));
    CHECK_RET(aclrtResetDeviceForce(deviceId));
    CHECK_RET(aclFinalize());
    LOG_INFO("sample-style C++ program passed");
    return 0;
}
