// The speed limit of the SoC's RTL on Verilator: macdma_soc_hostmem driven by plain C++.
//
// The same Verilog `macdma run` simulates, the same clocks (system 10 ns, GMII 8 ns) and
// the same full-duplex workload as `macdma bench`'s soc-both-ideal: frames of
// --frame-bytes (FCS excluded) at line rate into gmii_rx*, and as many out of gmii_tx*,
// with the registers set over AXI4-Lite and the rings kept full by a polling "driver"
// that touches the host memory's word array directly (as the cocotb benches' backdoor
// does). Nothing here is Python: what it costs is what the RTL costs.
//
// It is a bench, not a speed loop: every TX frame is checked on the wire (preamble, SFD,
// every byte, FCS, the gap, no tx_er), every RX frame in host memory (descriptor flags,
// length, every byte), the MAC's frame counters at the end; any difference ends the run
// with a message on stderr and exit status 1. --fault plants one (tests prove the checks).
//
// Register offsets come from macdma_regs.h (generated from the register map), descriptor
// fields from macdma_desc.h (generated from the descriptor layout), the model and its
// host memory from limit_model.h (written by the build); the ring layout is given on the
// command line by the Python side (sim/benches/limit/harness.py).

#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "limit_model.h"
#include "macdma_desc.h"
#include "macdma_regs.h"
#include "verilated.h"

namespace {

[[noreturn]] void fail(const char* format, ...) {
    va_list args;
    va_start(args, format);
    std::fprintf(stderr, "limit harness: FAIL: ");
    std::vfprintf(stderr, format, args);
    std::fprintf(stderr, "\n");
    va_end(args);
    std::exit(1);
}

double cpu_seconds() {
    timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

struct Options {
    uint32_t frames = 0;
    uint32_t frame_bytes = 0;
    uint32_t tx_ring = 0, rx_ring = 0;
    uint32_t tx_ring_base = 0, rx_ring_base = 0;
    uint32_t tx_buf_base = 0, tx_buf_stride = 0;
    uint32_t rx_buf_base = 0, rx_buf_bytes = 0;
    uint32_t burst_beats = 0, prefetch = 0;
    uint32_t ifg = 0;
    uint64_t poll_ns = 0;
    uint64_t sys_clk_ps = 0, phy_clk_ps = 0;
    uint64_t timeout_ns = 0;
    std::string fault = "none";
    uint32_t fault_frame = 0;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string name = argv[i];
        if (name.rfind("+verilator", 0) == 0) continue;
        if (i + 1 >= argc) fail("option %s needs a value", name.c_str());
        std::string value = argv[++i];
        char* end = nullptr;
        unsigned long long number = std::strtoull(value.c_str(), &end, 0);
        bool numeric = end && *end == '\0' && !value.empty();
        auto need = [&](auto& field) {
            if (!numeric) fail("option %s: %s is not a number", name.c_str(), value.c_str());
            field = number;
        };
        if (name == "--frames") need(o.frames);
        else if (name == "--frame-bytes") need(o.frame_bytes);
        else if (name == "--tx-ring") need(o.tx_ring);
        else if (name == "--rx-ring") need(o.rx_ring);
        else if (name == "--tx-ring-base") need(o.tx_ring_base);
        else if (name == "--rx-ring-base") need(o.rx_ring_base);
        else if (name == "--tx-buf-base") need(o.tx_buf_base);
        else if (name == "--tx-buf-stride") need(o.tx_buf_stride);
        else if (name == "--rx-buf-base") need(o.rx_buf_base);
        else if (name == "--rx-buf-bytes") need(o.rx_buf_bytes);
        else if (name == "--burst-beats") need(o.burst_beats);
        else if (name == "--prefetch") need(o.prefetch);
        else if (name == "--ifg") need(o.ifg);
        else if (name == "--poll-ns") need(o.poll_ns);
        else if (name == "--sys-clk-ps") need(o.sys_clk_ps);
        else if (name == "--phy-clk-ps") need(o.phy_clk_ps);
        else if (name == "--timeout-ns") need(o.timeout_ns);
        else if (name == "--fault") o.fault = value;
        else if (name == "--fault-frame") need(o.fault_frame);
        else fail("unknown option %s", name.c_str());
    }
    if (!o.frames || !o.frame_bytes || !o.tx_ring || !o.rx_ring || !o.tx_buf_stride ||
        !o.rx_buf_bytes || !o.burst_beats || !o.prefetch || !o.ifg || !o.poll_ns ||
        !o.sys_clk_ps || !o.phy_clk_ps || !o.timeout_ns)
        fail("every option but --fault and --fault-frame is required and non-zero");
    if (o.sys_clk_ps % 2 || o.phy_clk_ps % 2) fail("clock periods must be even (ps)");
    if (o.frame_bytes + 4 > o.tx_buf_stride || o.frame_bytes + 4 > o.rx_buf_bytes)
        fail("a %u-byte frame does not fit its buffers", o.frame_bytes);
    if (o.fault != "none" && o.fault != "tx-buffer" && o.fault != "rx-wire")
        fail("--fault must be none, tx-buffer or rx-wire, not %s", o.fault.c_str());
    if (o.fault != "none" && o.fault_frame >= o.frames)
        fail("--fault-frame %u is not one of the %u frames", o.fault_frame, o.frames);
    return o;
}

// -- frames ----------------------------------------------------------------------------

uint32_t crc_table[256];

void init_crc() {
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

uint32_t crc32(const uint8_t* data, size_t length) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < length; ++i) c = crc_table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

// Frame `index` of a direction (0 TX, 1 RX): an Ethernet header (locally administered
// addresses, the local experimental EtherType 88B5, never a MAC control frame), the
// frame's number, then bytes from a generator seeded by direction and number.
std::vector<uint8_t> frame(uint32_t direction, uint32_t index, uint32_t length) {
    static const uint8_t header[14] = {0x02, 0, 0, 0, 0, uint8_t(2 - direction),
                                       0x02, 0, 0, 0, 0, uint8_t(1 + direction),
                                       0x88, 0xB5};
    std::vector<uint8_t> bytes(length);
    std::memcpy(bytes.data(), header, 14);
    for (int i = 0; i < 4; ++i) bytes[14 + i] = uint8_t(index >> (8 * i));
    uint32_t state = 0x9E3779B9u * (2 * index + direction + 1);
    for (uint32_t i = 18; i < length; ++i) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes[i] = uint8_t(state);
    }
    return bytes;
}

// -- the bench -------------------------------------------------------------------------

constexpr uint8_t PREAMBLE = 0x55, SFD = 0xD5;
constexpr int PREAMBLE_BYTES = 7;

#define DESC_FIELD(words, F) \
    (((words)[MACDMA_DESC_##F##_WORD] & MACDMA_DESC_##F##_MASK) >> MACDMA_DESC_##F##_SHIFT)
#define DESC_SET(words, F, value) \
    ((words)[MACDMA_DESC_##F##_WORD] |= (uint32_t(value) << MACDMA_DESC_##F##_SHIFT) & MACDMA_DESC_##F##_MASK)

struct AxilOp {
    bool write;
    uint32_t addr, data;
    uint32_t* result;
};

class Bench {
  public:
    Bench(const Options& options, VerilatedContext* context)
        : o(options), top(new LIMIT_MODEL{context}), words(&LIMIT_HOST_WORDS(top)[0]) {}

    ~Bench() {
        top->final();
        delete top;
    }

    void run();

  private:
    const Options& o;
    LIMIT_MODEL* top;
    uint32_t* words;  // the RAM's word array
    uint64_t now_ps = 0, sys_next = 0, phy_next = 0;
    uint64_t evals = 0;

    // AXI4-Lite master
    std::deque<AxilOp> axil_queue;
    bool axil_busy = false;
    bool aw_handshake = false, w_handshake = false, b_handshake = false;
    bool ar_handshake = false, r_handshake = false;

    // RX player (the far end's transmitter)
    bool playing = false;
    std::vector<uint8_t> rx_symbols;
    size_t rx_pos = 0;
    uint32_t rx_gap = 0, rx_sent = 0;

    // TX recorder (the far end's receiver)
    std::vector<uint8_t> tx_symbols;
    uint32_t tx_idle = 0, tx_recorded = 0;
    bool tx_seen_frame = false;

    // the polling driver
    uint32_t tx_next_to_use = 0, tx_next_to_clean = 0, tx_posted = 0, tx_reaped = 0;
    uint32_t rx_next_to_use = 0, rx_next_to_clean = 0, rx_reaped = 0;
    uint64_t next_poll_ps = 0;

    uint64_t now_ns() const { return now_ps / 1000; }

    // -- host memory, through the RAM's word array ------------------------------------

    uint32_t word_at(uint32_t address) const { return words[address / 4]; }
    void set_word(uint32_t address, uint32_t value) { words[address / 4] = value; }

    void write_bytes(uint32_t address, const uint8_t* data, size_t length) {
        for (size_t i = 0; i < length; i += 4) {
            uint32_t value = 0;
            for (size_t b = 0; b < 4 && i + b < length; ++b) value |= uint32_t(data[i + b]) << (8 * b);
            set_word(address + i, value);
        }
    }

    uint8_t byte_at(uint32_t address) const { return uint8_t(word_at(address & ~3u) >> (8 * (address & 3))); }

    void read_descriptor(uint32_t base, uint32_t index, uint32_t out[4]) const {
        for (int w = 0; w < 4; ++w) out[w] = word_at(base + index * MACDMA_DESC_BYTES + 4 * w);
    }

    // Words 0..2 first, word 3 (own) last, as a driver posts.
    void post_descriptor(uint32_t base, uint32_t index, const uint32_t desc[4]) {
        for (int w = 0; w < 4; ++w) {
            if (w != MACDMA_DESC_OWN_WORD) set_word(base + index * MACDMA_DESC_BYTES + 4 * w, desc[w]);
        }
        set_word(base + index * MACDMA_DESC_BYTES + 4 * MACDMA_DESC_OWN_WORD, desc[MACDMA_DESC_OWN_WORD]);
    }

    // -- time ---------------------------------------------------------------------------

    void step();
    void sys_edge_sampled();
    void sys_edge_drive();
    void phy_edge_sampled();
    void phy_edge_drive();

    void settle_until_idle() {
        while (axil_busy || !axil_queue.empty()) step();
    }
    void write_reg(uint32_t addr, uint32_t value) {
        axil_queue.push_back({true, addr, value, nullptr});
        settle_until_idle();
    }
    uint32_t read_reg(uint32_t addr) {
        uint32_t value = 0;
        axil_queue.push_back({false, addr, 0, &value});
        settle_until_idle();
        return value;
    }

    // -- the driver -----------------------------------------------------------------------

    void post_tx();
    void reap_tx();
    void post_rx();
    void reap_rx();
    void poll();
    void check_tx_frame();
    void start_rx_frame();
};

void Bench::step() {
    uint64_t half_sys = o.sys_clk_ps / 2, half_phy = o.phy_clk_ps / 2;
    now_ps = sys_next < phy_next ? sys_next : phy_next;
    bool sys_rise = false, phy_rise = false;
    if (sys_next == now_ps) {
        top->clk = !top->clk;
        sys_rise = top->clk;
        sys_next += half_sys;
    }
    if (phy_next == now_ps) {
        top->tx_clk = !top->tx_clk;
        top->rx_clk = top->tx_clk;
        phy_rise = top->tx_clk;
        phy_next += half_phy;
    }
    // What a flop sees at the edge: the values before it.
    if (sys_rise) sys_edge_sampled();
    if (phy_rise) phy_edge_sampled();
    top->eval();
    ++evals;
    // New inputs after the edge, as a registered driver changes them.
    if (sys_rise) sys_edge_drive();
    if (phy_rise) phy_edge_drive();
    if (now_ps / 1000 > o.timeout_ns)
        fail("timed out at %" PRIu64 " ns: TX %u of %u frames posted, %u on the wire, %u reaped; "
             "RX %u of %u sent, %u received",
             now_ns(), tx_posted, o.frames, tx_recorded, tx_reaped, rx_sent, o.frames, rx_reaped);
}

void Bench::sys_edge_sampled() {
    aw_handshake = top->s_axil_awvalid && top->s_axil_awready;
    w_handshake = top->s_axil_wvalid && top->s_axil_wready;
    b_handshake = top->s_axil_bvalid && top->s_axil_bready;
    ar_handshake = top->s_axil_arvalid && top->s_axil_arready;
    r_handshake = top->s_axil_rvalid && top->s_axil_rready;
    if (b_handshake && top->s_axil_bresp)
        fail("AXI4-Lite write of 0x%03x answered %u", axil_queue.front().addr, top->s_axil_bresp);
    if (r_handshake && top->s_axil_rresp)
        fail("AXI4-Lite read of 0x%03x answered %u", axil_queue.front().addr, top->s_axil_rresp);
    if (r_handshake && axil_queue.front().result) *axil_queue.front().result = top->s_axil_rdata;
}

void Bench::sys_edge_drive() {
    if (axil_busy) {
        if (aw_handshake) top->s_axil_awvalid = 0;
        if (w_handshake) top->s_axil_wvalid = 0;
        if (ar_handshake) top->s_axil_arvalid = 0;
        if (b_handshake || r_handshake) {
            top->s_axil_bready = top->s_axil_rready = 0;
            axil_busy = false;
            axil_queue.pop_front();
        }
    }
    if (!axil_busy && !axil_queue.empty()) {
        const AxilOp& op = axil_queue.front();
        axil_busy = true;
        if (op.write) {
            top->s_axil_awaddr = op.addr;
            top->s_axil_wdata = op.data;
            top->s_axil_wstrb = 0xF;
            top->s_axil_awvalid = top->s_axil_wvalid = top->s_axil_bready = 1;
        } else {
            top->s_axil_araddr = op.addr;
            top->s_axil_arvalid = top->s_axil_rready = 1;
        }
    }
    if (playing && now_ps >= next_poll_ps) {
        poll();
        next_poll_ps = now_ps + o.poll_ns * 1000;
    }
}

// -- GMII ----------------------------------------------------------------------------------

void Bench::phy_edge_sampled() {
    if (top->gmii_tx_er) fail("gmii_tx_er high at %" PRIu64 " ns", now_ns());
    if (top->gmii_tx_en) {
        if (tx_symbols.empty() && tx_seen_frame && tx_idle < o.ifg)
            fail("TX frame %u started %u byte times after the previous one (MAC_IFG %u)", tx_recorded,
                 tx_idle, o.ifg);
        tx_symbols.push_back(top->gmii_txd);
        tx_idle = 0;
    } else {
        if (!tx_symbols.empty()) {
            check_tx_frame();
            tx_symbols.clear();
            tx_seen_frame = true;
        }
        ++tx_idle;
    }
}

void Bench::check_tx_frame() {
    uint32_t index = tx_recorded;
    if (index >= o.frames) fail("TX frame %u on the wire: only %u were posted", index + 1, o.frames);
    const std::vector<uint8_t>& got = tx_symbols;
    size_t header = PREAMBLE_BYTES + 1;
    if (got.size() != header + o.frame_bytes + 4)
        fail("TX frame %u: %zu bytes on the wire, expected %u (preamble, SFD, frame, FCS)", index,
             got.size(), unsigned(header + o.frame_bytes + 4));
    for (int i = 0; i < PREAMBLE_BYTES; ++i)
        if (got[i] != PREAMBLE) fail("TX frame %u: preamble byte %d is 0x%02x", index, i, got[i]);
    if (got[PREAMBLE_BYTES] != SFD) fail("TX frame %u: SFD is 0x%02x", index, got[PREAMBLE_BYTES]);
    std::vector<uint8_t> expected = frame(0, index, o.frame_bytes);
    for (uint32_t i = 0; i < o.frame_bytes; ++i)
        if (got[header + i] != expected[i])
            fail("TX frame %u byte %u: 0x%02x on the wire, 0x%02x posted", index, i, got[header + i],
                 expected[i]);
    uint32_t fcs = crc32(&got[header], o.frame_bytes);
    for (int i = 0; i < 4; ++i)
        if (got[header + o.frame_bytes + i] != uint8_t(fcs >> (8 * i)))
            fail("TX frame %u: bad FCS", index);
    ++tx_recorded;
}

void Bench::phy_edge_drive() {
    if (!playing) return;
    if (rx_pos < rx_symbols.size()) {
        top->gmii_rxd = rx_symbols[rx_pos++];
        top->gmii_rx_dv = 1;
        if (rx_pos == rx_symbols.size()) rx_gap = 0;
        return;
    }
    top->gmii_rx_dv = 0;
    top->gmii_rxd = 0;
    if (rx_sent < o.frames && ++rx_gap > o.ifg) start_rx_frame();
}

void Bench::start_rx_frame() {
    std::vector<uint8_t> payload = frame(1, rx_sent, o.frame_bytes);
    uint32_t fcs = crc32(payload.data(), payload.size());
    rx_symbols.assign(PREAMBLE_BYTES, PREAMBLE);
    rx_symbols.push_back(SFD);
    rx_symbols.insert(rx_symbols.end(), payload.begin(), payload.end());
    for (int i = 0; i < 4; ++i) rx_symbols.push_back(uint8_t(fcs >> (8 * i)));
    if (o.fault == "rx-wire" && rx_sent == o.fault_frame) rx_symbols[PREAMBLE_BYTES + 1 + 20] ^= 0x01;
    rx_pos = 0;
    ++rx_sent;
    // The first byte goes out on this edge.
    top->gmii_rxd = rx_symbols[rx_pos++];
    top->gmii_rx_dv = 1;
}

// -- the polling driver ------------------------------------------------------------------

void Bench::post_tx() {
    uint32_t posted = 0;
    // One slot stays empty, as in every driver (TAIL == HEAD means empty).
    while (tx_posted < o.frames && (tx_next_to_clean + o.tx_ring - tx_next_to_use - 1) % o.tx_ring) {
        uint32_t slot = tx_next_to_use;
        uint32_t buffer = o.tx_buf_base + slot * o.tx_buf_stride;
        std::vector<uint8_t> bytes = frame(0, tx_posted, o.frame_bytes);
        write_bytes(buffer, bytes.data(), bytes.size());
        uint32_t desc[4] = {0, 0, 0, 0};
        DESC_SET(desc, ADDR, buffer);
        DESC_SET(desc, LENGTH, o.frame_bytes);
        DESC_SET(desc, SOP, 1);
        DESC_SET(desc, EOP, 1);
        DESC_SET(desc, OWN, 1);
        post_descriptor(o.tx_ring_base, slot, desc);
        if (o.fault == "tx-buffer" && tx_posted == o.fault_frame) {
            // After the hand-over, before the DMA reads it: the wire must show it.
            set_word(buffer + 40, word_at(buffer + 40) ^ 0x00010000u);
        }
        tx_next_to_use = (slot + 1) % o.tx_ring;
        ++tx_posted;
        ++posted;
    }
    if (posted) axil_queue.push_back({true, MACDMA_TX_TAIL, tx_next_to_use, nullptr});
}

void Bench::reap_tx() {
    while (tx_next_to_clean != tx_next_to_use) {
        uint32_t desc[4];
        read_descriptor(o.tx_ring_base, tx_next_to_clean, desc);
        if (DESC_FIELD(desc, OWN)) break;
        if (DESC_FIELD(desc, DONE_LENGTH) != o.frame_bytes)
            fail("TX descriptor %u written back with done_length %u, not %u", tx_next_to_clean,
                 unsigned(DESC_FIELD(desc, DONE_LENGTH)), o.frame_bytes);
        tx_next_to_clean = (tx_next_to_clean + 1) % o.tx_ring;
        ++tx_reaped;
    }
}

void Bench::post_rx() {
    uint32_t posted = 0;
    while ((rx_next_to_clean + o.rx_ring - rx_next_to_use - 1) % o.rx_ring) {
        uint32_t slot = rx_next_to_use;
        uint32_t desc[4] = {0, 0, 0, 0};
        DESC_SET(desc, ADDR, o.rx_buf_base + slot * o.rx_buf_bytes);
        DESC_SET(desc, LENGTH, o.rx_buf_bytes);
        DESC_SET(desc, OWN, 1);
        post_descriptor(o.rx_ring_base, slot, desc);
        rx_next_to_use = (slot + 1) % o.rx_ring;
        ++posted;
    }
    if (posted) axil_queue.push_back({true, MACDMA_RX_TAIL, rx_next_to_use, nullptr});
}

void Bench::reap_rx() {
    while (rx_next_to_clean != rx_next_to_use) {
        uint32_t slot = rx_next_to_clean;
        uint32_t desc[4];
        read_descriptor(o.rx_ring_base, slot, desc);
        if (DESC_FIELD(desc, OWN)) break;
        uint32_t index = rx_reaped;
        if (index >= o.frames) fail("RX frame %u in host memory: only %u were sent", index + 1, o.frames);
        if (!DESC_FIELD(desc, SOP) || !DESC_FIELD(desc, EOP))
            fail("RX frame %u: descriptor %u without SOP and EOP (sop %u, eop %u)", index, slot,
                 unsigned(DESC_FIELD(desc, SOP)), unsigned(DESC_FIELD(desc, EOP)));
        if (DESC_FIELD(desc, ERROR) || DESC_FIELD(desc, RX_TRUNCATED))
            fail("RX frame %u: descriptor %u says error (cause %u, truncated %u)", index, slot,
                 unsigned(DESC_FIELD(desc, RX_ERROR)), unsigned(DESC_FIELD(desc, RX_TRUNCATED)));
        if (DESC_FIELD(desc, FRAME_LENGTH) != o.frame_bytes)
            fail("RX frame %u: frame_length %u, %u sent", index, unsigned(DESC_FIELD(desc, FRAME_LENGTH)),
                 o.frame_bytes);
        std::vector<uint8_t> expected = frame(1, index, o.frame_bytes);
        uint32_t buffer = o.rx_buf_base + slot * o.rx_buf_bytes;
        for (uint32_t i = 0; i < o.frame_bytes; ++i)
            if (byte_at(buffer + i) != expected[i])
                fail("RX frame %u byte %u: 0x%02x in host memory, 0x%02x sent", index, i,
                     byte_at(buffer + i), expected[i]);
        rx_next_to_clean = (slot + 1) % o.rx_ring;
        ++rx_reaped;
    }
}

void Bench::poll() {
    reap_tx();
    post_tx();
    reap_rx();
    post_rx();
}

void Bench::run() {
    init_crc();
    sys_next = phy_next = 0;
    top->clk = top->tx_clk = top->rx_clk = 0;
    top->tx_clk_enable = top->rx_clk_enable = 1;
    top->mdio_i = 1;  // the MDIO line's pull-up: no PHY answers
    top->mem_latency_cycles = 0;
    top->rst = top->tx_rst = top->rx_rst = 1;
    top->eval();
    while (now_ps < 8 * o.sys_clk_ps) step();
    top->rst = top->tx_rst = top->rx_rst = 0;
    while (now_ps < 16 * o.sys_clk_ps) step();

    uint32_t id = read_reg(MACDMA_ID);
    if (id != MACDMA_ID_RESET_VALUE) fail("ID register reads 0x%08x, not 0x%08x", id, MACDMA_ID_RESET_VALUE);
    // The rings start empty: the memory is zero, so no descriptor has own.
    write_reg(MACDMA_TX_RING_BASE, o.tx_ring_base);
    write_reg(MACDMA_TX_RING_SIZE, o.tx_ring);
    write_reg(MACDMA_TX_TAIL, 0);
    write_reg(MACDMA_TX_BURST_BEATS, o.burst_beats);
    write_reg(MACDMA_TX_PREFETCH, o.prefetch);
    write_reg(MACDMA_RX_RING_BASE, o.rx_ring_base);
    write_reg(MACDMA_RX_RING_SIZE, o.rx_ring);
    write_reg(MACDMA_RX_TAIL, 0);
    write_reg(MACDMA_RX_BURST_BEATS, o.burst_beats);
    write_reg(MACDMA_RX_PREFETCH, o.prefetch);
    write_reg(MACDMA_IRQ_ENABLE, 0);  // polled, as soc-both-ideal's driver
    write_reg(MACDMA_IRQ_SYS_CLK_MHZ, uint32_t(1000000 / o.sys_clk_ps));
    write_reg(MACDMA_MAC_IFG, o.ifg);
    write_reg(MACDMA_MAC_CTRL, MACDMA_MAC_CTRL_TX_ENABLE_MASK | MACDMA_MAC_CTRL_RX_ENABLE_MASK);
    uint32_t cfg_error = read_reg(MACDMA_ID_CFG_ERROR);
    if (cfg_error) fail("the SoC rejected a configuration write: ID_CFG_ERROR 0x%08x", cfg_error);
    post_rx();
    settle_until_idle();
    write_reg(MACDMA_TX_CTRL, MACDMA_TX_CTRL_RUN_MASK);
    write_reg(MACDMA_RX_CTRL, MACDMA_RX_CTRL_RUN_MASK);

    uint64_t start_ns = now_ns();
    playing = true;
    next_poll_ps = now_ps;
    while (tx_recorded < o.frames || rx_reaped < o.frames) step();
    uint64_t traffic_ns = now_ns() - start_ns;
    playing = false;
    reap_tx();
    settle_until_idle();

    struct Count {
        const char* name;
        uint32_t addr;
    } counts[] = {
        {"STATS_TX_FRAMES_GOOD", MACDMA_STATS_TX_FRAMES_GOOD},
        {"STATS_RX_FRAMES_GOOD", MACDMA_STATS_RX_FRAMES_GOOD},
    };
    // A frame's status crosses from the MAC's clock domain after its last byte: the
    // counters may lag the wire by a few clocks, never by 10 us.
    uint64_t settle_ps = now_ps + 10000000;
    for (const Count& count : counts) {
        uint32_t value = read_reg(count.addr);
        while (value != o.frames && now_ps < settle_ps) value = read_reg(count.addr);
        if (value != o.frames)
            fail("%s reads %u 10 us after %u frames each way", count.name, value, o.frames);
    }
    for (uint32_t addr : {MACDMA_STATS_RX_FCS_ERRORS, MACDMA_RX_DROPS, MACDMA_TX_DROPS}) {
        uint32_t value = read_reg(addr);
        if (value) fail("register 0x%03x (an error count) reads %u", addr, value);
    }
    std::printf("{\"frames\": %u, \"frame_bytes\": %u, \"sim_ns\": %" PRIu64 ", \"traffic_ns\": %" PRIu64
                ", \"evals\": %" PRIu64 ", \"tx_frames\": %u, \"rx_frames\": %u, \"tx_reaped\": %u}\n",
                o.frames, o.frame_bytes, now_ns(), traffic_ns, evals, tx_recorded, rx_reaped, tx_reaped);
}

}  // namespace

int main(int argc, char** argv) {
    double started = cpu_seconds();
    Options options = parse(argc, argv);
    VerilatedContext* context = new VerilatedContext;
    context->commandArgs(argc, argv);
    {
        Bench bench(options, context);
        bench.run();
    }
    std::fprintf(stderr, "limit harness: cpu_seconds %.6f\n", cpu_seconds() - started);
    delete context;
    return 0;
}
