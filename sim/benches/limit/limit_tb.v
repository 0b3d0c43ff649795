// The speed limit of the SoC's RTL on Icarus: macdma_soc_hostmem driven by plain Verilog.
//
// harness.cpp's workload and checks, in a testbench vvp runs with no cocotb and no VPI:
// clocks of +sys_clk_ps and +phy_clk_ps, +frames frames of +frame_bytes (FCS excluded)
// each way at line rate (gap +ifg), registers over AXI4-Lite, and a polling "driver" every
// +poll_ns that reaps and refills both rings through the RAM's word array. Every TX frame
// is checked on the pins (preamble, SFD, every byte, FCS), every RX frame in host memory
// (descriptor flags, length, every byte), the MAC's frame counters at the end; a
// difference prints "limit harness: FAIL: ..." and ends the run with $fatal.
//
// Register offsets: macdma_regs.vh, descriptor fields: macdma_desc.vh, both written at
// build time from the register map and the descriptor layout (sim/benches/limit/harness.py).

`timescale 1ns / 1ps
`include "macdma_regs.vh"
`include "macdma_desc.vh"

module limit_tb;
    localparam MAX_FRAME = 16384;

    // -- the workload (plusargs) --------------------------------------------------------
    integer frames, frame_bytes, tx_ring, rx_ring, tx_ring_base, rx_ring_base;
    integer tx_buf_base, tx_buf_stride, rx_buf_base, rx_buf_bytes, burst_beats, prefetch;
    integer ifg, poll_ns, sys_clk_ps, phy_clk_ps, timeout_ns, fault_frame;
    reg [8*16-1:0] fault;

    task need(input [8*16-1:0] name, input integer found);
        if (!found) begin
            $display("limit harness: FAIL: plusarg +%0s=N is required", name);
            $fatal(1);
        end
    endtask

    initial begin
        need("frames", $value$plusargs("frames=%d", frames));
        need("frame_bytes", $value$plusargs("frame_bytes=%d", frame_bytes));
        need("tx_ring", $value$plusargs("tx_ring=%d", tx_ring));
        need("rx_ring", $value$plusargs("rx_ring=%d", rx_ring));
        need("tx_ring_base", $value$plusargs("tx_ring_base=%d", tx_ring_base));
        need("rx_ring_base", $value$plusargs("rx_ring_base=%d", rx_ring_base));
        need("tx_buf_base", $value$plusargs("tx_buf_base=%d", tx_buf_base));
        need("tx_buf_stride", $value$plusargs("tx_buf_stride=%d", tx_buf_stride));
        need("rx_buf_base", $value$plusargs("rx_buf_base=%d", rx_buf_base));
        need("rx_buf_bytes", $value$plusargs("rx_buf_bytes=%d", rx_buf_bytes));
        need("burst_beats", $value$plusargs("burst_beats=%d", burst_beats));
        need("prefetch", $value$plusargs("prefetch=%d", prefetch));
        need("ifg", $value$plusargs("ifg=%d", ifg));
        need("poll_ns", $value$plusargs("poll_ns=%d", poll_ns));
        need("sys_clk_ps", $value$plusargs("sys_clk_ps=%d", sys_clk_ps));
        need("phy_clk_ps", $value$plusargs("phy_clk_ps=%d", phy_clk_ps));
        need("timeout_ns", $value$plusargs("timeout_ns=%d", timeout_ns));
        if (!$value$plusargs("fault=%s", fault)) fault = "none";
        if (!$value$plusargs("fault_frame=%d", fault_frame)) fault_frame = 0;
        if (frame_bytes + 8 > MAX_FRAME) begin
            $display("limit harness: FAIL: frames of %0d bytes are longer than %0d", frame_bytes, MAX_FRAME);
            $fatal(1);
        end
    end

    // -- the SoC ------------------------------------------------------------------------
    reg clk = 0, tx_clk = 0, rx_clk = 0, rst = 1, tx_rst = 1, rx_rst = 1;
    reg [11:0] s_axil_awaddr = 0, s_axil_araddr = 0;
    reg [31:0] s_axil_wdata = 0;
    reg s_axil_awvalid = 0, s_axil_wvalid = 0, s_axil_bready = 0, s_axil_arvalid = 0, s_axil_rready = 0;
    wire s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_arready, s_axil_rvalid;
    wire [1:0] s_axil_bresp, s_axil_rresp;
    wire [31:0] s_axil_rdata;
    reg [7:0] gmii_rxd = 0;
    reg gmii_rx_dv = 0;
    wire [7:0] gmii_txd;
    wire gmii_tx_en, gmii_tx_er;

    macdma_soc_hostmem dut (
        .clk(clk), .rst(rst), .tx_clk(tx_clk), .tx_rst(tx_rst), .rx_clk(rx_clk), .rx_rst(rx_rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(3'd0), .s_axil_awvalid(s_axil_awvalid),
        .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(4'hF),
        .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp),
        .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
        .s_axil_araddr(s_axil_araddr), .s_axil_arprot(3'd0), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .gmii_rxd(gmii_rxd), .gmii_rx_dv(gmii_rx_dv), .gmii_rx_er(1'b0),
        .gmii_txd(gmii_txd), .gmii_tx_en(gmii_tx_en), .gmii_tx_er(gmii_tx_er),
        .tx_clk_enable(1'b1), .rx_clk_enable(1'b1), .mdio_i(1'b1),
        .mem_latency_cycles(10'd0),
        .mem_err0_start(32'd0), .mem_err0_end(32'd0), .mem_err0_read(1'b0), .mem_err0_write(1'b0),
        .mem_err1_start(32'd0), .mem_err1_end(32'd0), .mem_err1_read(1'b0), .mem_err1_write(1'b0),
        // The memory system off and the CPU's traffic port idle: the bench timing alone.
        .mem_shared(1'b0), .mem_page_hit_cycles(10'd0), .mem_page_miss_cycles(10'd0),
        .mem_turnaround_cycles(10'd0), .mem_page_bytes_log2(5'd0), .mem_bank_bits(2'd0),
        .mem_beat_cost_x16(10'd0), .mem_cpu_beat_cost_x16(10'd0),
        .mem_cpu_cmd_addr(32'd0), .mem_cpu_cmd_bytes(24'd0), .mem_cpu_cmd_write(1'b0),
        .mem_cpu_cmd_seq(8'd0), .mem_cpu_beat_bytes_log2(3'd2), .mem_cpu_burst_bytes_log2(4'd6)
    );

    initial begin
        #0.001;  // after the plusargs
        forever #(sys_clk_ps / 2000.0) clk = ~clk;
    end
    initial begin
        #0.001;
        forever begin
            #(phy_clk_ps / 2000.0);
            tx_clk = ~tx_clk;
            rx_clk = tx_clk;
        end
    end

    task fail_now;
        $fatal(1);
    endtask

    // -- frames: the same generator as harness.cpp --------------------------------------
    reg [31:0] crc_state;
    task crc_byte(input [7:0] value);
        integer k;
        begin
            crc_state = crc_state ^ value;
            for (k = 0; k < 8; k = k + 1)
                crc_state = crc_state[0] ? (32'hEDB88320 ^ (crc_state >> 1)) : (crc_state >> 1);
        end
    endtask

    // make_frame: frame `index` of a direction (0 TX, 1 RX) into `work` (the driver's);
    // the RX player and the TX checker keep their own copies.
    reg [7:0] work [0:MAX_FRAME-1];
    reg [7:0] rx_wire [0:MAX_FRAME-1];
    reg [7:0] tx_expected [0:MAX_FRAME-1];

    task make_frame(input integer direction, input integer index);
        integer i;
        reg [31:0] state;
        begin
            work[0] = 8'h02; work[1] = 0; work[2] = 0; work[3] = 0; work[4] = 0;
            work[5] = 2 - direction;
            work[6] = 8'h02; work[7] = 0; work[8] = 0; work[9] = 0; work[10] = 0;
            work[11] = 1 + direction;
            work[12] = 8'h88; work[13] = 8'hB5;
            for (i = 0; i < 4; i = i + 1) work[14 + i] = index >> (8 * i);
            state = 32'h9E3779B9 * (2 * index + direction + 1);
            for (i = 18; i < frame_bytes; i = i + 1) begin
                state = state ^ (state << 13);
                state = state ^ (state >> 17);
                state = state ^ (state << 5);
                work[i] = state[7:0];
            end
        end
    endtask

    // -- AXI4-Lite: sampled just after the edge (the values before it), driven with <=
    task axil_write(input [11:0] addr, input [31:0] data);
        reg aw_done, w_done, b_done;
        begin
            s_axil_awaddr <= addr; s_axil_wdata <= data;
            s_axil_awvalid <= 1; s_axil_wvalid <= 1; s_axil_bready <= 1;
            aw_done = 0; w_done = 0; b_done = 0;
            while (!b_done) begin
                @(posedge clk);
                if (s_axil_awvalid && s_axil_awready) begin aw_done = 1; s_axil_awvalid <= 0; end
                if (s_axil_wvalid && s_axil_wready) begin w_done = 1; s_axil_wvalid <= 0; end
                if (s_axil_bvalid && s_axil_bready) begin
                    b_done = 1;
                    s_axil_bready <= 0;
                    if (s_axil_bresp != 0) begin
                        $display("limit harness: FAIL: AXI4-Lite write of 0x%03x answered %0d", addr, s_axil_bresp);
                        fail_now;
                    end
                end
            end
        end
    endtask

    task axil_read(input [11:0] addr, output [31:0] data);
        reg r_done;
        begin
            s_axil_araddr <= addr; s_axil_arvalid <= 1; s_axil_rready <= 1;
            r_done = 0;
            while (!r_done) begin
                @(posedge clk);
                if (s_axil_arvalid && s_axil_arready) s_axil_arvalid <= 0;
                if (s_axil_rvalid && s_axil_rready) begin
                    r_done = 1;
                    data = s_axil_rdata;
                    s_axil_rready <= 0;
                    if (s_axil_rresp != 0) begin
                        $display("limit harness: FAIL: AXI4-Lite read of 0x%03x answered %0d", addr, s_axil_rresp);
                        fail_now;
                    end
                end
            end
        end
    endtask

    // -- host memory, through the RAM's word array ---------------------------------------
    function [31:0] word_at(input integer address);
        word_at = dut.host_memory.host_ram.array.words[address >> 2];
    endfunction
    task set_word(input integer address, input [31:0] value);
        dut.host_memory.host_ram.array.words[address >> 2] = value;
    endtask
    function [7:0] byte_at(input integer address);
        reg [31:0] w;
        begin
            w = dut.host_memory.host_ram.array.words[address >> 2];
            byte_at = w >> (8 * (address & 3));
        end
    endfunction

    function [127:0] descriptor(input integer base, input integer index);
        integer w;
        for (w = 0; w < 4; w = w + 1)
            descriptor[32 * w +: 32] = word_at(base + index * `MACDMA_DESC_BYTES + 4 * w);
    endfunction

    // Words 0..2 first, the word with own last, as a driver posts.
    task post_descriptor(input integer base, input integer index, input [127:0] desc);
        integer w;
        begin
            for (w = 0; w < 4; w = w + 1)
                if (w != `MACDMA_DESC_OWN_WORD) set_word(base + index * `MACDMA_DESC_BYTES + 4 * w, desc[32 * w +: 32]);
            set_word(base + index * `MACDMA_DESC_BYTES + 4 * `MACDMA_DESC_OWN_WORD, desc[32 * `MACDMA_DESC_OWN_WORD +: 32]);
        end
    endtask

    // -- the polling driver ------------------------------------------------------------
    integer tx_next_to_use = 0, tx_next_to_clean = 0, tx_posted = 0, tx_reaped = 0;
    integer rx_next_to_use = 0, rx_next_to_clean = 0, rx_reaped = 0;
    integer tx_recorded = 0, rx_sent = 0;
    reg playing = 0;

    task post_tx;
        integer posted, slot, buffer, i;
        reg [127:0] desc;
        reg [31:0] value;
        begin
            posted = 0;
            while (tx_posted < frames && (tx_next_to_clean + tx_ring - tx_next_to_use - 1) % tx_ring) begin
                slot = tx_next_to_use;
                buffer = tx_buf_base + slot * tx_buf_stride;
                make_frame(0, tx_posted);
                for (i = 0; i < frame_bytes; i = i + 4) begin
                    value = {work[i + 3], work[i + 2], work[i + 1], work[i]};
                    set_word(buffer + i, value);
                end
                desc = 0;
                `MACDMA_DESC_SET_ADDR(desc, buffer);
                `MACDMA_DESC_SET_LENGTH(desc, frame_bytes);
                `MACDMA_DESC_SET_SOP(desc, 1);
                `MACDMA_DESC_SET_EOP(desc, 1);
                `MACDMA_DESC_SET_OWN(desc, 1);
                post_descriptor(tx_ring_base, slot, desc);
                if (fault == "tx-buffer" && tx_posted == fault_frame)
                    set_word(buffer + 40, word_at(buffer + 40) ^ 32'h00010000);
                tx_next_to_use = (slot + 1) % tx_ring;
                tx_posted = tx_posted + 1;
                posted = posted + 1;
            end
            if (posted) axil_write(`MACDMA_TX_TAIL, tx_next_to_use);
        end
    endtask

    task reap_tx;
        reg [127:0] desc;
        reg stop;
        begin
            stop = 0;
            while (!stop && tx_next_to_clean != tx_next_to_use) begin
                desc = descriptor(tx_ring_base, tx_next_to_clean);
                if (`MACDMA_DESC_GET_OWN(desc)) stop = 1;
                else begin
                    if (`MACDMA_DESC_GET_DONE_LENGTH(desc) != frame_bytes) begin
                        $display("limit harness: FAIL: TX descriptor %0d written back with done_length %0d, not %0d",
                                 tx_next_to_clean, `MACDMA_DESC_GET_DONE_LENGTH(desc), frame_bytes);
                        fail_now;
                    end
                    tx_next_to_clean = (tx_next_to_clean + 1) % tx_ring;
                    tx_reaped = tx_reaped + 1;
                end
            end
        end
    endtask

    task post_rx;
        integer posted, slot;
        reg [127:0] desc;
        begin
            posted = 0;
            while ((rx_next_to_clean + rx_ring - rx_next_to_use - 1) % rx_ring) begin
                slot = rx_next_to_use;
                desc = 0;
                `MACDMA_DESC_SET_ADDR(desc, rx_buf_base + slot * rx_buf_bytes);
                `MACDMA_DESC_SET_LENGTH(desc, rx_buf_bytes);
                `MACDMA_DESC_SET_OWN(desc, 1);
                post_descriptor(rx_ring_base, slot, desc);
                rx_next_to_use = (slot + 1) % rx_ring;
                posted = posted + 1;
            end
            if (posted) axil_write(`MACDMA_RX_TAIL, rx_next_to_use);
        end
    endtask

    task reap_rx;
        reg [127:0] desc;
        reg stop;
        integer slot, buffer, i;
        begin
            stop = 0;
            while (!stop && rx_next_to_clean != rx_next_to_use) begin
                slot = rx_next_to_clean;
                desc = descriptor(rx_ring_base, slot);
                if (`MACDMA_DESC_GET_OWN(desc)) stop = 1;
                else begin
                    if (rx_reaped >= frames) begin
                        $display("limit harness: FAIL: RX frame %0d in host memory: only %0d were sent", rx_reaped + 1, frames);
                        fail_now;
                    end
                    if (!`MACDMA_DESC_GET_SOP(desc) || !`MACDMA_DESC_GET_EOP(desc)) begin
                        $display("limit harness: FAIL: RX frame %0d: descriptor %0d without SOP and EOP", rx_reaped, slot);
                        fail_now;
                    end
                    if (`MACDMA_DESC_GET_ERROR(desc) || `MACDMA_DESC_GET_RX_TRUNCATED(desc)) begin
                        $display("limit harness: FAIL: RX frame %0d: descriptor %0d says error (cause %0d, truncated %0d)",
                                 rx_reaped, slot, `MACDMA_DESC_GET_RX_ERROR(desc), `MACDMA_DESC_GET_RX_TRUNCATED(desc));
                        fail_now;
                    end
                    if (`MACDMA_DESC_GET_FRAME_LENGTH(desc) != frame_bytes) begin
                        $display("limit harness: FAIL: RX frame %0d: frame_length %0d, %0d sent", rx_reaped,
                                 `MACDMA_DESC_GET_FRAME_LENGTH(desc), frame_bytes);
                        fail_now;
                    end
                    make_frame(1, rx_reaped);
                    buffer = rx_buf_base + slot * rx_buf_bytes;
                    for (i = 0; i < frame_bytes; i = i + 1)
                        if (byte_at(buffer + i) !== work[i]) begin
                            $display("limit harness: FAIL: RX frame %0d byte %0d: 0x%02x in host memory, 0x%02x sent",
                                     rx_reaped, i, byte_at(buffer + i), work[i]);
                            fail_now;
                        end
                    rx_next_to_clean = (slot + 1) % rx_ring;
                    rx_reaped = rx_reaped + 1;
                end
            end
        end
    endtask

    // -- the far end's transmitter: RX frames at line rate -------------------------------
    integer rx_pos, rx_length, gap;
    initial begin
        wait (playing);
        while (rx_sent < frames) begin
            make_frame(1, rx_sent);
            crc_state = 32'hFFFFFFFF;
            for (rx_pos = 0; rx_pos < frame_bytes; rx_pos = rx_pos + 1) begin
                rx_wire[rx_pos] = work[rx_pos];
                crc_byte(work[rx_pos]);
            end
            crc_state = ~crc_state;
            for (rx_pos = 0; rx_pos < 4; rx_pos = rx_pos + 1) rx_wire[frame_bytes + rx_pos] = crc_state >> (8 * rx_pos);
            if (fault == "rx-wire" && rx_sent == fault_frame) rx_wire[20] = rx_wire[20] ^ 8'h01;
            rx_length = frame_bytes + 4;
            for (rx_pos = -8; rx_pos < rx_length; rx_pos = rx_pos + 1) begin
                @(posedge rx_clk);
                gmii_rxd <= rx_pos < -1 ? 8'h55 : rx_pos == -1 ? 8'hD5 : rx_wire[rx_pos];
                gmii_rx_dv <= 1;
            end
            rx_sent = rx_sent + 1;
            for (gap = 0; gap < ifg; gap = gap + 1) begin
                @(posedge rx_clk);
                gmii_rxd <= 0;
                gmii_rx_dv <= 0;
            end
        end
    end

    // -- the far end's receiver: TX frames checked on the pins ---------------------------
    reg [7:0] tx_seen [0:MAX_FRAME-1];
    integer tx_length = 0, j;
    always @(posedge tx_clk) begin
        if (gmii_tx_er) begin
            $display("limit harness: FAIL: gmii_tx_er high at %0t", $time);
            fail_now;
        end
        if (gmii_tx_en) begin
            tx_seen[tx_length] = gmii_txd;
            tx_length = tx_length + 1;
        end else if (tx_length) begin
            check_tx_frame;
            tx_length = 0;
        end
    end

    task check_tx_frame;
        integer i;
        begin
            if (tx_recorded >= frames) begin
                $display("limit harness: FAIL: TX frame %0d on the wire: only %0d were posted", tx_recorded + 1, frames);
                fail_now;
            end
            if (tx_length != 8 + frame_bytes + 4) begin
                $display("limit harness: FAIL: TX frame %0d: %0d bytes on the wire, expected %0d", tx_recorded, tx_length,
                         8 + frame_bytes + 4);
                fail_now;
            end
            for (i = 0; i < 7; i = i + 1)
                if (tx_seen[i] != 8'h55) begin
                    $display("limit harness: FAIL: TX frame %0d: preamble byte %0d is 0x%02x", tx_recorded, i, tx_seen[i]);
                    fail_now;
                end
            if (tx_seen[7] != 8'hD5) begin
                $display("limit harness: FAIL: TX frame %0d: SFD is 0x%02x", tx_recorded, tx_seen[7]);
                fail_now;
            end
            // `work` belongs to the driver process; the checker keeps its own copy.
            make_expected_tx(tx_recorded);
            crc_tx = 32'hFFFFFFFF;
            for (i = 0; i < frame_bytes; i = i + 1) begin
                if (tx_seen[8 + i] !== tx_expected[i]) begin
                    $display("limit harness: FAIL: TX frame %0d byte %0d: 0x%02x on the wire, 0x%02x posted", tx_recorded, i,
                             tx_seen[8 + i], tx_expected[i]);
                    fail_now;
                end
                crc_tx_byte(tx_seen[8 + i]);
            end
            crc_tx = ~crc_tx;
            for (i = 0; i < 4; i = i + 1)
                if (tx_seen[8 + frame_bytes + i] != crc_tx[8 * i +: 8]) begin
                    $display("limit harness: FAIL: TX frame %0d: bad FCS", tx_recorded);
                    fail_now;
                end
            tx_recorded = tx_recorded + 1;
        end
    endtask

    reg [31:0] crc_tx;
    task crc_tx_byte(input [7:0] value);
        integer k;
        begin
            crc_tx = crc_tx ^ value;
            for (k = 0; k < 8; k = k + 1) crc_tx = crc_tx[0] ? (32'hEDB88320 ^ (crc_tx >> 1)) : (crc_tx >> 1);
        end
    endtask

    task make_expected_tx(input integer index);
        integer i;
        reg [31:0] state;
        begin
            tx_expected[0] = 8'h02; tx_expected[1] = 0; tx_expected[2] = 0; tx_expected[3] = 0; tx_expected[4] = 0;
            tx_expected[5] = 2;
            tx_expected[6] = 8'h02; tx_expected[7] = 0; tx_expected[8] = 0; tx_expected[9] = 0; tx_expected[10] = 0;
            tx_expected[11] = 1;
            tx_expected[12] = 8'h88; tx_expected[13] = 8'hB5;
            for (i = 0; i < 4; i = i + 1) tx_expected[14 + i] = index >> (8 * i);
            state = 32'h9E3779B9 * (2 * index + 1);
            for (i = 18; i < frame_bytes; i = i + 1) begin
                state = state ^ (state << 13);
                state = state ^ (state >> 17);
                state = state ^ (state << 5);
                tx_expected[i] = state[7:0];
            end
        end
    endtask

    // -- the run -------------------------------------------------------------------------
    reg [31:0] value;
    real started_ns;
    initial begin
        #0.002;
        repeat (8) @(posedge clk);
        rst <= 0; tx_rst <= 0; rx_rst <= 0;
        repeat (8) @(posedge clk);
        axil_read(`MACDMA_ID, value);
        if (value != `MACDMA_ID_RESET_VALUE) begin
            $display("limit harness: FAIL: ID register reads 0x%08x", value);
            fail_now;
        end
        axil_write(`MACDMA_TX_RING_BASE, tx_ring_base);
        axil_write(`MACDMA_TX_RING_SIZE, tx_ring);
        axil_write(`MACDMA_TX_TAIL, 0);
        axil_write(`MACDMA_TX_BURST_BEATS, burst_beats);
        axil_write(`MACDMA_TX_PREFETCH, prefetch);
        axil_write(`MACDMA_RX_RING_BASE, rx_ring_base);
        axil_write(`MACDMA_RX_RING_SIZE, rx_ring);
        axil_write(`MACDMA_RX_TAIL, 0);
        axil_write(`MACDMA_RX_BURST_BEATS, burst_beats);
        axil_write(`MACDMA_RX_PREFETCH, prefetch);
        axil_write(`MACDMA_IRQ_ENABLE, 0);
        axil_write(`MACDMA_IRQ_SYS_CLK_MHZ, 1000000 / sys_clk_ps);
        axil_write(`MACDMA_MAC_IFG, ifg);
        axil_write(`MACDMA_MAC_CTRL, `MACDMA_MAC_CTRL_TX_ENABLE_MASK | `MACDMA_MAC_CTRL_RX_ENABLE_MASK);
        axil_read(`MACDMA_ID_CFG_ERROR, value);
        if (value) begin
            $display("limit harness: FAIL: the SoC rejected a configuration write: ID_CFG_ERROR 0x%08x", value);
            fail_now;
        end
        @(negedge clk);
        post_rx;
        axil_write(`MACDMA_TX_CTRL, `MACDMA_TX_CTRL_RUN_MASK);
        axil_write(`MACDMA_RX_CTRL, `MACDMA_RX_CTRL_RUN_MASK);
        started_ns = $realtime;
        playing = 1;
        while (tx_recorded < frames || rx_reaped < frames) begin
            // Between edges: the backdoor never races the RAM's own writes.
            @(negedge clk);
            reap_tx;
            post_tx;
            reap_rx;
            @(negedge clk);
            post_rx;
            #(poll_ns);
            if ($realtime > timeout_ns) begin
                $display("limit harness: FAIL: timed out at %0t ns: TX %0d of %0d frames posted, %0d on the wire, %0d reaped; RX %0d of %0d sent, %0d received",
                         $time, tx_posted, frames, tx_recorded, tx_reaped, rx_sent, frames, rx_reaped);
                fail_now;
            end
        end
        @(negedge clk);
        reap_tx;
        check_count("STATS_TX_FRAMES_GOOD", `MACDMA_STATS_TX_FRAMES_GOOD, frames);
        check_count("STATS_RX_FRAMES_GOOD", `MACDMA_STATS_RX_FRAMES_GOOD, frames);
        check_count("STATS_RX_FCS_ERRORS", `MACDMA_STATS_RX_FCS_ERRORS, 0);
        check_count("RX_DROPS", `MACDMA_RX_DROPS, 0);
        check_count("TX_DROPS", `MACDMA_TX_DROPS, 0);
        $display("{\"frames\": %0d, \"frame_bytes\": %0d, \"sim_ns\": %0d, \"traffic_ns\": %0d, \"tx_frames\": %0d, \"rx_frames\": %0d, \"tx_reaped\": %0d}",
                 frames, frame_bytes, $time, $rtoi($realtime - started_ns), tx_recorded, rx_reaped, tx_reaped);
        $finish;
    end

    // A frame's status crosses from the MAC's clock domain after its last byte: the
    // counters may lag the wire by a few clocks, never by 10 us.
    task check_count(input [8*24-1:0] name, input [11:0] addr, input integer expected);
        reg [31:0] count;
        real deadline;
        begin
            deadline = $realtime + 10000;
            axil_read(addr, count);
            while (count != expected && $realtime < deadline) axil_read(addr, count);
            if (count != expected) begin
                $display("limit harness: FAIL: %0s reads %0d, expected %0d", name, count, expected);
                fail_now;
            end
        end
    endtask
endmodule
